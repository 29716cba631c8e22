/* clwb over every line of a file of MIB MiB on /dev/shm, already mapped
 * and written (touch=1) or mapped only (touch=0: the first loop faults
 * every page in), three times, each followed by sfence. usage:
 * clwb_loop MIB 0|1
 * (gcc -O2 -mclwb clwb_loop.c -o clwb_loop) */
#define _GNU_SOURCE
#include <immintrin.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <fcntl.h>
#include <unistd.h>
#include <time.h>
static double now(void){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec/1e9;}
int main(int argc,char**argv){
  size_t len=(size_t)atoll(argv[1])<<20; int touch=atoi(argv[2]);
  int fd=open("/dev/shm/clwb-loop.test",O_RDWR|O_CREAT|O_TRUNC,0600); ftruncate(fd,len);
  char*p=mmap(0,len,PROT_READ|PROT_WRITE,MAP_SHARED,fd,0);
  if(touch) memset(p,1,len);
  for(int rep=0;rep<3;rep++){
  double t=now();
  for(size_t o=0;o<len;o+=64) _mm_clwb(p+o);
  _mm_sfence();
  printf("%zu MiB touch=%d: %.1f ms\n",len>>20,touch,(now()-t)*1e3);}
  unlink("/dev/shm/clwb-loop.test");
}
