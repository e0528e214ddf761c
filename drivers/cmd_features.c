/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf features`. */
#include "atf_cli.h"

int atf_cmd_features(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("features", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
