#ifndef SHOWBATCH_CYAML_SHIM_H
#define SHOWBATCH_CYAML_SHIM_H
#include <yaml.h>
#endif
