/* cli_tangent.c — the shared data and network options (cli_tangent.h): option codes → the
 * library's option setters. */
#include "cli_tangent.h"
#include "atf_cli.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

static const struct option tangent_options[] = {ATF_CLI_DATA_OPTIONS, ATF_CLI_NET_OPTIONS,
                                                {NULL, 0, NULL, 0}};

/* The entry of code c, or NULL. */
static const struct option *find(int c)
{
    for (const struct option *o = tangent_options; o->name; o++)
        if (o->val == c)
            return o;
    return NULL;
}

/* The library names the item ("widths: ..."); on the command line it is the option: "--widths:
 * ...". */
static atf_error name_the_flag(atf_error e, const char *name, char *err)
{
    size_t len = strlen(name);
    if (e && err && !strncmp(err, name, len) && err[len] == ':') {
        char msg[ATF_ERRLEN];
        snprintf(msg, sizeof msg, "--%s", err);
        snprintf(err, ATF_ERRLEN, "%s", msg);
    }
    return e;
}

atf_error atf_cli_tangent_option(int c, const char *value, atf_data_options *d,
                                 atf_net_options *n, int *used, char *err)
{
    const struct option *o = find(c);
    int net = c >= ATF_CLI_OPT_MLP;
    *used = o != NULL && (net ? n != NULL : d != NULL);
    if (!*used)
        return ATF_OK;
    /* The flags are the library's 0/1 options of the same name. */
    if (c == ATF_CLI_OPT_STANDARDIZE || c == ATF_CLI_OPT_NO_STANDARDIZE)
        return atf_data_option(d, "standardize", c == ATF_CLI_OPT_STANDARDIZE ? "1" : "0", err);
    if (c == ATF_CLI_OPT_BIAS) /* a bare --bias: every layer */
        return name_the_flag(atf_net_option(n, "bias", value ? value : "1", err), "bias", err);
    if (net)
        return name_the_flag(atf_net_option(n, o->name, value, err), o->name, err);
    return name_the_flag(atf_data_option(d, o->name, value, err), o->name, err);
}

atf_error atf_cli_add_data_dirs(atf_data_options *d, char *err)
{
    char roots[ATF_MAX_DATA_DIRS][ATF_CLI_PATHLEN];
    int n = atf_cli_data_roots(roots, ATF_MAX_DATA_DIRS);
    for (int i = 0; i < n; i++) {
        atf_error e = atf_data_add_dir(d, roots[i], err);
        if (e)
            return e;
    }
    return ATF_OK;
}
