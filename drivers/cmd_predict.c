/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf predict`. */
#include "atf_cli.h"

int atf_cmd_predict(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("predict", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
