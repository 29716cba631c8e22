/* hmap.c - placeholder */
#include "cont.h"
