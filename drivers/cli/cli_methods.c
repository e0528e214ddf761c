/* cli_methods.c — the solver's method table as the command line shows it: --method parsing, the
 * help entries of `atf solve`, `atf baseline` and `atf path`, and the `atf methods` command.
 * Everything here reads the table (atf_method_info_of); no method is named in this file. */
#include <string.h>

#include "atf_cli.h"

#define HELP_WIDTH 80

void atf_cli_wrap(FILE *out, int at, int indent, const char *text)
{
    int col = at, fresh = 1; /* fresh: no word of text on this line yet */
    for (const char *p = text; *p;) {
        if (*p == ' ') {
            p++;
            continue;
        }
        int word = (int)strcspn(p, " ");
        if (!fresh && col + 1 + word > HELP_WIDTH) {
            fprintf(out, "\n%*s", indent, "");
            col = indent, fresh = 1;
        }
        if (!fresh)
            fputc(' ', out), col++;
        fprintf(out, "%.*s", word, p);
        col += word, fresh = 0, p += word;
    }
    fputc('\n', out);
}

const char *atf_cli_method_solves(const atf_method_info *in)
{
    if (in->baseline)
        return "the baseline";
    if (in->interpolation && in->penalized)
        return "interpolation, squared, xent";
    return in->penalized ? "squared, xent" : "interpolation";
}

static int taken(atf_cli_method_keep *keep, const atf_method_info *in)
{
    return !keep || keep(in);
}

atf_error atf_cli_parse_method(const char *val, atf_cli_method_keep *keep, atf_method *m,
                               char *err)
{
    atf_method parsed;
    if (val && atf_method_parse(val, &parsed) == ATF_OK &&
        (parsed == ATF_METHOD_AUTO || taken(keep, atf_method_info_of(parsed)))) {
        *m = parsed;
        return ATF_OK;
    }
    char names[256] = "auto";
    for (int k = 0; k < atf_method_count(); k++) {
        const atf_method_info *in = atf_method_info_of((atf_method)k);
        size_t used = strlen(names);
        if (taken(keep, in) && used < sizeof names)
            snprintf(names + used, sizeof names - used, ", %s", in->name);
    }
    atf_errorf(err, "--method: '%s' is not one of %s", val ? val : "", names);
    return ATF_E_USAGE;
}

void atf_cli_method_help(FILE *out, int indent, atf_cli_method_keep *keep)
{
    int width = 0;
    for (int k = 0; k < atf_method_count(); k++) {
        const atf_method_info *in = atf_method_info_of((atf_method)k);
        int len = (int)strlen(in->name);
        if (taken(keep, in) && len > width)
            width = len;
    }
    for (int k = 0; k < atf_method_count(); k++) {
        const atf_method_info *in = atf_method_info_of((atf_method)k);
        if (!taken(keep, in))
            continue;
        char text[512];
        snprintf(text, sizeof text, "%s: %s", atf_cli_method_solves(in), in->summary);
        fprintf(out, "%*s%-*s  ", indent, "", width, in->name);
        atf_cli_wrap(out, indent + width + 2, indent + width + 2, text);
    }
}
