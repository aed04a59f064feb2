#!/usr/bin/env bash
# model_names_test.sh SOURCE_DIR: issue 31, the model describes itself. The C++ of app/
# asks a model's properties (hamiltonians::ModelKind, Model), never compares its name, so
# a new model plugs in without touching app/.
set -u
src="$1"
hits=$(grep -rnE '(==|!=) *"(ti|graphene|hr|matrix-market)"|"(ti|graphene|hr|matrix-market)" *(==|!=)' \
       --include='*.cpp' --include='*.hpp' "$src/app")
if [ -n "$hits" ]; then
  echo "FAIL: app/ compares model names:"; echo "$hits"; exit 1
fi
echo "ok: app/ compares no model name"
