/* records.h: the records of a data input, whatever file holds them: JSON Lines (an object a line), a JSON
 * array of objects (AlpacaEval's files), or Parquet (a row each, as JSON text: parquet.h). The input is a
 * path ("-": JSON Lines on stdin), a folder (its *.parquet, *.jsonl and *.json files in name order; a folder
 * holding several splits, e.g. train-... and test-... shards, is refused), a glob pattern ppa expands itself
 * ('data/train-*.parquet', quoted), or several of these separated by commas. The kind of each file is read
 * from its first bytes ("PAR1": Parquet, '[' after blanks: a JSON array, else JSON Lines), never from its name.
 *
 * A record's position `loc` is its line (JSON Lines), row (Parquet) or element (array) number, counted on
 * across the files of an input (the second file's first record follows the first file's last), so that it is
 * unique in the input and equal to the line number for one JSON Lines file; records_where turns it back into
 * "FILE:LINE", "FILE:row N" or "FILE:element N". */
#ifndef PPA_RECORDS_H
#define PPA_RECORDS_H

#include <stddef.h>
#include <stdint.h>

typedef struct RecordReader RecordReader;

/* NULL with "INPUT: why" in err (nothing matches, a missing file, a folder of several splits...). */
RecordReader *records_open(const char *input, char *err, size_t errlen);
/* The next record's text (valid until the next call; JSON Lines lines may hold NUL bytes, which the JSON
 * parser refuses); *loc its position. 1, 0 at the end, -1 for a damaged file (a Parquet page, a JSON array that
 * does not parse, a file that cannot be opened): records_error says "FILE: why" (FILE:row N where there is one).
 * A JSON Lines read error or over-long line is fatal, as jsonl_next's. */
int records_next(RecordReader *r, const char **text, size_t *len, long *loc);
/* After records_next returned -1: why, and the exit status it calls for (2 bad input, 1 a read error). */
const char *records_error(const RecordReader *r, int *status);
void records_close(RecordReader *r);
/* "FILE:LINE" (FILE:row N, FILE:element N) of the record at loc just returned by r, into buf; returns buf. */
const char *records_here(const RecordReader *r, long loc, char *buf, size_t n);

/* Reads every record of input into a malloc'd array of items of size bytes: parse fills a zeroed item from
 * the record's text and returns 0, or -1 with a message (the item is then released with free_item). A bad
 * record stops the read with "FILE:LINE: message" (FILE:row N, FILE:element N) in err, or, with skip_invalid,
 * is reported on stderr ("ppa: FILE:LINE: skipped: message"), counted in *skipped, and passed over. 0, or -1
 * with nothing allocated. */
typedef int (*RecordParseFn)(const char *text, size_t len, long loc, void *item, void *ctx, char *msg,
                             size_t msglen);
int records_read_all(const char *input, size_t size, RecordParseFn parse, void (*free_item)(void *), void *ctx,
                     int skip_invalid, void **items, int *n, long *skipped, char *err, size_t errlen);

/* "FILE:LINE" / "FILE:row N" / "FILE:element N" of a position of an input read in this process (or
 * "INPUT:LOC" when it was not) into buf; returns buf. */
const char *records_where(const char *input, long loc, char *buf, size_t n);

/* The files of an input in reading order ("-" for stdin), malloc'd (free each and the array); -1 with "INPUT: why"
 * in err when it names none (an empty glob, a folder without data files or of several splits). */
int records_files(const char *input, char ***files, int *n, char *err, size_t errlen);

/* 1 when the input is one regular file holding a JSON array (its first byte but blanks is '['): AlpacaEval's
 * files, which ppa generate answers in kind. */
int records_is_array(const char *input);

/* A hash of every file of the input, in order: each must be a regular file (a pipe could not be read again);
 * 0 with *ok = 0 and "PATH: why" in err when one is not or cannot be read. */
uint64_t records_hash(const char *input, int *ok, char *err, size_t errlen);

#endif
