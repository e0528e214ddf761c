/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf train`. */
#include "atf_cli.h"

int atf_cmd_train(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("train", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
