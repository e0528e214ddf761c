/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf solve`. */
#include "atf_cli.h"

int atf_cmd_solve(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("solve", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
