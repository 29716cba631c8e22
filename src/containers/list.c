/* list.c - placeholder */
#include "cont.h"
