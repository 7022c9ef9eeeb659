/*
 * Runs the harness's invariants (harness.c) over input files without libFuzzer,
 * so that test/unit/fuzz_regression_test.rb can replay every saved input with
 * any C compiler. With --every-split each input is also tried with every split
 * offset, not only the one its control bytes name.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int sp_fuzz_one(const uint8_t *data, size_t size);

static unsigned char *slurp(const char *path, size_t *size) {
  FILE *f = fopen(path, "rb");
  if (!f) { perror(path); exit(2); }
  size_t cap = 4096, len = 0;
  unsigned char *data = malloc(cap);
  size_t n;
  while (data && (n = fread(data + len, 1, cap - len, f)) > 0) {
    len += n;
    if (len == cap) data = realloc(data, cap *= 2);
  }
  fclose(f);
  if (!data) { fprintf(stderr, "out of memory\n"); exit(2); }
  *size = len;
  return data;
}

int main(int argc, char **argv) {
  int every_split = 0, count = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--every-split") == 0) { every_split = 1; continue; }
    size_t size;
    unsigned char *data = slurp(argv[i], &size);
    sp_fuzz_one(data, size);
    for (size_t at = 0; every_split && size >= 3 && at <= size - 3 && at < 65536; at++) {
      data[1] = (unsigned char)(at & 0xff);
      data[2] = (unsigned char)(at >> 8);
      sp_fuzz_one(data, size);
    }
    free(data);
    count++;
  }
  printf("replayed %d inputs, every invariant held\n", count);
  return 0;
}
