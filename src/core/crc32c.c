/* crc32c.c: CRC-32C by a 256-entry table (crc32c.h). */
#include "core/crc32c.h"

#include <pthread.h>

static uint32_t TABLE[256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_build(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        TABLE[i] = c;
    }
}

uint32_t crc32c(const void *p, size_t n) {
    pthread_once(&table_once, table_build);
    const unsigned char *b = p;
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) c = TABLE[(c ^ b[i]) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

uint32_t crc32c_mask(uint32_t crc) { return ((crc >> 15) | (crc << 17)) + 0xa282ead8u; }
