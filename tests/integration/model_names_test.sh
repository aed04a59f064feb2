#!/usr/bin/env bash
# model_names_test.sh SOURCE_DIR: issue 31, the model describes itself. The C++ of app/
# asks a model's properties (hamiltonians::ModelKind, Model), never compares its name, so
# a new model plugs in without touching app/; kpm-plot (app/kpm_plot.py) asks its one table
# of model geometries (GEOMETRY), never compares the name either.
set -u
src="$1"
names='(ti|graphene|hr|matrix-market)'
hits=$(grep -rnE "(==|!=) *\"$names\"|\"$names\" *(==|!=)" --include='*.cpp' --include='*.hpp' "$src/app")
hits+=$(grep -rnE "(==|!=) *[\"']$names[\"']|[\"']$names[\"'] *(==|!=)|\<in *[\(\[\{] *[\"']$names[\"']" \
        --include='*.py' "$src/app")
if [ -n "$hits" ]; then
  echo "FAIL: app/ compares model names:"; echo "$hits"; exit 1
fi
echo "ok: app/ compares no model name"
