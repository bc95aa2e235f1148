/* carry.h: the files a folder ppa writes (a model folder, a checkpoint, a
 * PEFT adapter folder) carries from the folder it was made from, byte for
 * byte: the tokenizer and chat-template files that ppa's readers and
 * transformers' from_pretrained read (and save_pretrained writes), and
 * generation_config.json. One list, used by every writer. A carried name
 * that is there but is no readable regular file is an error naming it,
 * never skipped; a symbolic link is read through, as file_read_all does. */
#ifndef PPA_CARRY_H
#define PPA_CARRY_H

#include <stddef.h>

/* The tokenizer and template files, NULL-terminated: tokenizer.json,
 * tokenizer_config.json, chat_template.jinja (the template transformers and
 * ppa prefer to tokenizer_config.json's), chat_template.json (a processor's
 * template), special_tokens_map.json, added_tokens.json, and the slow
 * tokenizers' vocabularies tokenizer.model, vocab.json and merges.txt. */
extern const char *const CARRY_TOKENIZER_FILES[];
/* carried where the input has it; else ppa writes its own (checkpoint.c) */
#define CARRY_GENERATION_CONFIG "generation_config.json"

/* The folder a path names: the path when it is a folder, else the folder
 * holding the file ("." for a bare name); malloc'd. */
char *carry_folder_of(const char *path);
/* Copies the regular file src to dst byte for byte (dst written
 * atomically). 0, or -1 with "SRC: why" or "DST: why" in err. */
int carry_copy(const char *src, const char *dst, char *err, size_t errlen);
/* from/name to to/name: 1 when copied, 0 when from holds no such name, -1
 * with err when it is there but no readable regular file. */
int carry_file(const char *from, const char *to, const char *name, char *err, size_t errlen);
/* 0 when every carried name in dir (the list and generation_config.json)
 * is a readable regular file or absent; else -1 naming the first that is
 * not. Commands call it on their input before a long run, so that a run
 * never ends in a refused save. */
int carry_check(const char *dir, char *err, size_t errlen);

#endif
