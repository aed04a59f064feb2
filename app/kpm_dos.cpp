// kpm-dos: the density of states, local DOS or A(k, E) by KPM (app/run/run_main.hpp).
#include "app/run/run_main.hpp"

int main(int argc, char** argv) { return topokpm::app::run_main(argc, argv, topokpm::app::Program::Dos); }
