/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf demo`. */
#include "atf_cli.h"

int atf_cmd_demo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("demo", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
