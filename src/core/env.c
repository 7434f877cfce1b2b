/* Environment table: parsing, defaults and the printout all come from
 * USHMEMI_ENV_TABLE, so the documentation cannot drift from the code. */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/internal.h"

ushmemi_env_t ushmemi_env;

typedef struct {
    const char *field;
    ushmemi_env_type_t type;
    const char *def;
    const char *names;
    const char *help;
    void *slot;
} env_entry_t;

static const env_entry_t env_entries[] = {
#define USHMEMI_ENV_ENTRY(field, type, def, names, help)                                           \
    {#field, USHMEMI_ENV_##type, def, names, help, &ushmemi_env.field},
    USHMEMI_ENV_TABLE(USHMEMI_ENV_ENTRY)
#undef USHMEMI_ENV_ENTRY
};

int ushmemi_parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    while (isspace((unsigned char)*s))
        s++;
    if (*s == '-' || !isdigit((unsigned char)*s))
        return USHMEM_EINVAL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno)
        return USHMEM_EINVAL;
    unsigned shift = 0;
    switch (toupper((unsigned char)*end)) {
    case 'K': shift = 10; break;
    case 'M': shift = 20; break;
    case 'G': shift = 30; break;
    case 'T': shift = 40; break;
    case '\0': break;
    default: return USHMEM_EINVAL;
    }
    if (shift) {
        end++;
        if (toupper((unsigned char)*end) == 'B')
            end++;
    }
    if (*end != '\0' || (shift && v > (~0ULL >> shift)))
        return USHMEM_EINVAL;
    *out = (size_t)(v << shift);
    return 0;
}

/* First set variable among the "A|B" names; *used receives its name. */
static const char *env_lookup(const char *names, char *used, size_t used_len)
{
    const char *p = names;
    while (*p) {
        const char *bar = strchr(p, '|');
        size_t n = bar ? (size_t)(bar - p) : strlen(p);
        if (n < used_len) {
            memcpy(used, p, n);
            used[n] = '\0';
            const char *v = getenv(used);
            if (v && *v)
                return v;
        }
        p += n + (bar ? 1 : 0);
    }
    return NULL;
}

static int env_parse_one(const env_entry_t *e, const char *text, const char *name)
{
    switch (e->type) {
    case USHMEMI_ENV_SIZE:
        if (ushmemi_parse_size(text, (size_t *)e->slot) == 0)
            return 0;
        fprintf(stderr, "ushmem: %s='%s' is not a size (use bytes or a K/M/G/T suffix)\n", name,
                text);
        return USHMEM_EINVAL;
    case USHMEMI_ENV_INT: {
        char *end;
        errno = 0;
        long v = strtol(text, &end, 10);
        if (errno || end == text || *end) {
            fprintf(stderr, "ushmem: %s='%s' is not an integer\n", name, text);
            return USHMEM_EINVAL;
        }
        *(long *)e->slot = v;
        return 0;
    }
    case USHMEMI_ENV_BOOL:
        if (!strcmp(text, "1") || !strcasecmp(text, "y") || !strcasecmp(text, "yes") ||
            !strcasecmp(text, "true") || !strcasecmp(text, "on")) {
            *(int *)e->slot = 1;
            return 0;
        }
        if (!strcmp(text, "0") || !strcasecmp(text, "n") || !strcasecmp(text, "no") ||
            !strcasecmp(text, "false") || !strcasecmp(text, "off")) {
            *(int *)e->slot = 0;
            return 0;
        }
        fprintf(stderr, "ushmem: %s='%s' is not a boolean (0/1, yes/no, on/off)\n", name, text);
        return USHMEM_EINVAL;
    case USHMEMI_ENV_STR: *(const char **)e->slot = text; return 0;
    }
    return USHMEM_EINVAL;
}

int ushmemi_env_load(void)
{
    int rc = 0;
    for (size_t i = 0; i < sizeof env_entries / sizeof env_entries[0]; i++) {
        const env_entry_t *e = &env_entries[i];
        char name[64];
        if (env_parse_one(e, e->def, "default") != 0)
            return USHMEM_EINVAL; /* table bug */
        const char *v = env_lookup(e->names, name, sizeof name);
        if (v && env_parse_one(e, v, name) != 0)
            rc = USHMEM_EINVAL;
    }
    return rc;
}

void ushmemi_env_print(FILE *out)
{
    for (size_t i = 0; i < sizeof env_entries / sizeof env_entries[0]; i++) {
        const env_entry_t *e = &env_entries[i];
        char value[64];
        switch (e->type) {
        case USHMEMI_ENV_SIZE: snprintf(value, sizeof value, "%zu", *(size_t *)e->slot); break;
        case USHMEMI_ENV_INT: snprintf(value, sizeof value, "%ld", *(long *)e->slot); break;
        case USHMEMI_ENV_BOOL: snprintf(value, sizeof value, "%d", *(int *)e->slot); break;
        case USHMEMI_ENV_STR: snprintf(value, sizeof value, "%s", *(const char **)e->slot); break;
        }
        fprintf(out, "  %-40s default %-6s now %-12s %s\n", e->names, e->def, value, e->help);
    }
}

/* Markdown table for docs/ (ushmem_info --env-markdown). */
void ushmemi_env_print_markdown(FILE *out);
void ushmemi_env_print_markdown(FILE *out)
{
    fprintf(out, "| Variable | Default | Meaning |\n|---|---|---|\n");
    for (size_t i = 0; i < sizeof env_entries / sizeof env_entries[0]; i++) {
        const env_entry_t *e = &env_entries[i];
        fprintf(out, "| `");
        for (const char *p = e->names; *p; p++)
            fputs(*p == '|' ? "` / `" : (char[2]){*p, 0}, out);
        fprintf(out, "` | `%s` | %s |\n", e->def, e->help);
    }
}
