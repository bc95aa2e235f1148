/* fuzz_parquet.c: Parquet files (io/parquet.h). Every row of a file that opens is read; each row's text must
 * be one valid JSON object (the reader's promise to every JSON Lines parser after it), and an error must name
 * the file. */
#include "fuzz_common.h"
#include "io/json.h"
#include "io/parquet.h"

static char file_path[600];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc, (void)argv;
    fuzz_path(file_path, sizeof file_path, "x.parquet");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    fuzz_write(file_path, data, size);
    char err[2048];
    ParquetReader *r = parquet_open(file_path, err, sizeof err);
    if (!r) {
        FUZZ_ASSERT(strstr(err, file_path) == err, "an open error without the file's name: %s", err);
        return 0;
    }
    const char *text;
    size_t len;
    int64_t row, rc, n = 0;
    while ((rc = parquet_next(r, &text, &len, &row, err, sizeof err)) == 1) {
        char why[512];
        cJSON *j = json_parse(text, len, why, sizeof why);
        FUZZ_ASSERT(j && cJSON_IsObject(j), "row %lld is not a JSON object (%s): %.200s", (long long)row, why, text);
        cJSON_Delete(j);
        FUZZ_ASSERT(row == ++n, "row %lld after %lld rows", (long long)row, (long long)n - 1);
    }
    FUZZ_ASSERT(rc == 0 || strstr(err, file_path) == err, "a read error without the file's name: %s", err);
    parquet_close(r);
    return 0;
}
