/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf baseline`. */
#include "atf_cli.h"

int atf_cmd_baseline(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("baseline", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
