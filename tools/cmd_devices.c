/* cmd_devices.c — placeholder until the subcommand lands. */
#include "cli.h"
#include <stdio.h>
int bt_cmd_devices(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "blocktune devices: not built yet\n");
    return 1;
}
