/* test_json.c: the strict JSON reader (io/json.h): what cJSON alone would
 * accept silently (duplicate keys, content after the value, NUL in strings
 * and bytes, deep nesting) is refused with a message and, for texts of
 * several lines, the line; valid texts parse as before; whole numbers and
 * booleans are typed strictly. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "io/json.h"

static char err[512];

static void accept(const char *text, size_t len, const char *what) {
    cJSON *j = json_parse(text, len, err, sizeof err);
    CHECK(j != NULL, "%s: refused: %s", what, err);
    cJSON_Delete(j);
}

static void refuse(const char *text, size_t len, const char *needle, const char *what) {
    err[0] = 0;
    cJSON *j = json_parse(text, len, err, sizeof err);
    CHECK(!j && strstr(err, needle), "%s: want '%s', got %s '%s'", what, needle, j ? "a tree" : "the message", err);
    cJSON_Delete(j);
}

#define ACCEPT(t, what) accept(t, strlen(t), what)
#define REFUSE(t, needle, what) refuse(t, strlen(t), needle, what)

static void test_texts(void) {
    ACCEPT("{\"a\": 1, \"b\": [1, 2, {\"a\": 2}]}\n", "the same key in nested objects");
    ACCEPT("[{\"a\": 1}, {\"a\": 2}]", "the same key in sibling objects");
    ACCEPT("{}", "an empty object (no keys to compare)");
    ACCEPT("[{}, {\"a\": 1}, {}]", "empty objects among others");
    ACCEPT("{\"a\": \"\\\\u0000\"}", "an escaped backslash before u0000 is text, not NUL");
    ACCEPT("{\"a\": [\"x\", \"x\"]}", "equal strings in a list");
    ACCEPT("  {\"a\": 1}  \r\n", "blanks around the value");
    REFUSE("{\"scores\": [1], \"labels\": [2], \"scores\": [3]}", "duplicate key \"scores\"", "duplicate key on one line");
    REFUSE("{\n \"a\": 1,\n \"b\": {\"c\": 1,\n  \"c\": 2}\n}", "line 4: duplicate key \"c\" (first at line 3)",
           "duplicate key in a nested object, both lines");
    REFUSE("{\"a\": 1} x", "content after the JSON value", "trailing garbage");
    REFUSE("{\"a\": 1}{\"b\": 2}", "content after the JSON value", "two objects on a line");
    REFUSE("{\"prompt\": \"ab\\u0000cd\"}", "a string holds NUL", "\\u0000 in a string");
    REFUSE("{\"a\\u0000\": 1}", "a string holds NUL", "\\u0000 in a key");
    refuse("{\"a\": 1}\0{\"b\": 2}", 17, "a NUL byte", "a NUL byte after the value");
    refuse("{\"a\": \"x\0y\"}", 12, "a NUL byte in a string", "a NUL byte in a string");
    REFUSE("{\"a\": 1,}", "invalid JSON", "cJSON's own errors stay");
    REFUSE("{\n\"a\": 1,\n\"b\": }", "line 3: invalid JSON", "the line of a syntax error");
    REFUSE("", "invalid JSON", "empty text");
    /* UTF-8: named by the field's path and the byte within the string, never an offset in some rendered text */
    ACCEPT("{\"a\": \"h\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"}", "2-, 3- and 4-byte characters");
    REFUSE("{\"r\": [\"x\", \"y\xfe\"]}", "\"r\"[1]: invalid UTF-8 at byte 1 of the string", "a stray byte, with its path");
    REFUSE("{\"m\": [{\"c\": \"ab\xc0\xaf\"}]}", "\"m\"[0].\"c\": invalid UTF-8 at byte 2", "an overlong form");
    REFUSE("{\"a\": \"\xed\xa0\x80\"}", "invalid UTF-8 at byte 0", "a surrogate");
    REFUSE("{\"a\": \"\xf4\x90\x80\x80\"}", "invalid UTF-8 at byte 0", "past U+10FFFF");
    REFUSE("{\"k\xff\": 1}", "(its key)", "a key");
    /* nesting: deep enough for real files, not for a stack bomb */
    char deep[2 * 600 + 1];
    for (int i = 0; i < 600; i++) deep[i] = '[', deep[1199 - i] = ']';
    deep[1200] = 0;
    REFUSE(deep, "nesting deeper than 512 levels", "600 levels");
    deep[0] = 0;
    for (int i = 0; i < 100; i++) strcat(deep, "[");
    for (int i = 0; i < 100; i++) strcat(deep, "]");
    ACCEPT(deep, "100 levels");
}

/* a tokenizer-sized object: 200,000 keys are checked in well under a second */
static void test_large(void) {
    size_t cap = 200000 * 24 + 16, n = 0;
    char *t = malloc(cap);
    n += (size_t)sprintf(t + n, "{");
    for (int i = 0; i < 200000; i++) n += (size_t)sprintf(t + n, "%s\"tok%d\": %d", i ? ", " : "", i, i);
    n += (size_t)sprintf(t + n, "}");
    accept(t, n, "200,000 distinct keys");
    memcpy(t + n - 1, ", \"tok123\": 1}", 15); /* one repeated at the end */
    refuse(t, n + 13, "duplicate key \"tok123\"", "a repeat among 200,000 keys");
    free(t);
}

static void test_typed(void) {
    const char *text = "{\"id\": 3.5, \"n\": 3, \"big\": 1e30, \"neg\": -1, \"s\": \"3\", \"b\": \"false\", \"t\": true, \"inf\": 1e400}";
    cJSON *j = json_parse(text, strlen(text), err, sizeof err);
    CHECK(j != NULL, "typed: %s", err);
    long v = 0;
    CHECK(json_whole(cJSON_GetObjectItem(j, "n"), "n", 0, 10, &v, err, sizeof err) == 0 && v == 3, "3 is whole");
    CHECK(json_whole(cJSON_GetObjectItem(j, "id"), "id", 0, 10, &v, err, sizeof err) == -1 &&
              strstr(err, "\"id\" must be a whole number in [0, 10], found 3.5"),
          "3.5 is not read as 3: %s", err);
    CHECK(json_whole(cJSON_GetObjectItem(j, "big"), "big", 0, 1e9, &v, err, sizeof err) == -1, "1e30 out of range");
    CHECK(json_whole(cJSON_GetObjectItem(j, "neg"), "neg", 0, 10, &v, err, sizeof err) == -1, "-1 below the range");
    CHECK(json_whole(cJSON_GetObjectItem(j, "s"), "s", 0, 10, &v, err, sizeof err) == -1, "\"3\" is text");
    CHECK(json_whole(NULL, "absent", 0, 10, &v, err, sizeof err) == -1 && strstr(err, "found nothing"), "absent");
    CHECK(json_whole(cJSON_GetObjectItem(j, "inf"), "inf", 0, 10, &v, err, sizeof err) == -1 &&
              strstr(err, "\"inf\" must be a whole number in [0, 10], found a number that overflows a double"),
          "1e400 (inf to cJSON) is named as what the text holds, not null: %s", err);
    int b = 7;
    CHECK(json_bool(j, "t", &b, err, sizeof err) == 0 && b == 1, "true");
    CHECK(json_bool(j, "b", &b, err, sizeof err) == -1 && strstr(err, "\"b\" must be true or false, found \"false\""),
          "the string \"false\" is not false: %s", err);
    b = 7;
    CHECK(json_bool(j, "absent", &b, err, sizeof err) == 0 && b == 7, "absent keeps the default");
    cJSON_Delete(j);
}

int main(void) {
    test_texts();
    test_large();
    test_typed();
    return check_report("test_json");
}
