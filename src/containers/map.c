/* map.c - placeholder */
#include "cont.h"
