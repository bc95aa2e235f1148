/* tfevents.h: TensorBoard's event files, written: the format TensorBoard, tf.compat.v1.train.summary_iterator and
 * `wandb sync --sync-tensorboard` read.
 *
 * The file is a sequence of TFRecords: uint64 length (little-endian), masked CRC-32C of those 8 bytes, the data,
 * masked CRC-32C of the data (core/crc32c.h). Each record's data is a serialized tensorflow.Event
 * (tensorflow/core/util/event.proto): the first holds file_version "brain.Event:2", every later one a step's
 * scalars:
 *     Event   { double wall_time = 1; int64 step = 2; string file_version = 3; Summary summary = 5; }
 *     Summary { repeated Value value = 1; }
 *     Value   { string tag = 1; float simple_value = 2; }
 * The messages are encoded here by hand (protobuf's wire format: a varint key field << 3 | type, then a varint,
 * 8 little-endian bytes of a double, 4 of a float, or a varint length and the bytes), fields in number order and
 * proto3's defaults (step 0, wall_time 0) left out, as protobuf's own serializers write them: a reader's
 * re-serialization gives the same bytes. A value is float32, as TensorBoard keeps scalars (round to nearest).
 * Each record is flushed when written, so a killed run leaves a file whose records are all whole but perhaps
 * the last. */
#ifndef PPA_TFEVENTS_H
#define PPA_TFEVENTS_H

#include <stddef.h>

typedef struct TfEvents TfEvents;

typedef struct {
    const char *tag; /* "train/loss" */
    double value;    /* written as float32 */
} TfScalar;

/* Creates path (truncated; never through a link: io/file.h) and writes the file_version event at wall_time
 * (seconds since 1970). NULL with "PATH: why" in err. */
TfEvents *tfevents_create(const char *path, double wall_time, char *err, size_t errlen);
/* One event: step, wall_time and the n scalars as its summary's values, flushed. 0, or -1 with "PATH: why". */
int tfevents_write(TfEvents *t, long step, double wall_time, const TfScalar *v, int n, char *err, size_t errlen);
/* Closes the file; 0, or -1 with "PATH: why" (a failed last flush). t may be NULL. */
int tfevents_close(TfEvents *t, char *err, size_t errlen);

/* The serialized Event of one record, for tests: *len bytes, malloc'd. file_version NULL: a summary event. */
unsigned char *tfevents_encode(long step, double wall_time, const char *file_version, const TfScalar *v, int n,
                               size_t *len);

#endif
