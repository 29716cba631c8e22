/* str.c - placeholder */
#include "cont.h"
