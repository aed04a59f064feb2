// kpm-eigs: eigenpairs of the same models (models.md §6; app/run/run_main.hpp).
#include "app/run/run_main.hpp"

int main(int argc, char** argv) { return topokpm::app::run_main(argc, argv, topokpm::app::Program::Eigs); }
