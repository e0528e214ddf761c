/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf penalty`. */
#include "atf_cli.h"

int atf_cmd_penalty(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("penalty", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
