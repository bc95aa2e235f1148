/* crc32c.h: CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of TFRecord framing (io/tfevents.h),
 * with TensorFlow's mask. A table of 256 words built on first use; no hardware instruction, so every machine gives
 * the same bytes. */
#ifndef PPA_CRC32C_H
#define PPA_CRC32C_H

#include <stddef.h>
#include <stdint.h>

/* CRC-32C of n bytes ("123456789" gives 0xE3069283, the check value of the catalogue) */
uint32_t crc32c(const void *p, size_t n);
/* TensorFlow's masked form, ((crc >> 15) | (crc << 17)) + 0xa282ead8: a CRC stored beside data that itself holds
 * CRCs no longer checks as one */
uint32_t crc32c_mask(uint32_t crc);

#endif
