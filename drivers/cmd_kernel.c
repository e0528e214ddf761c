/* TEMPORARY SCAFFOLD — replaced by the real implementation of `atf kernel`. */
#include "atf_cli.h"

int atf_cmd_kernel(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    return atf_cli_fail("kernel", ATF_E_USAGE, "SCAFFOLD: not built yet");
}
