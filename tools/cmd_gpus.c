/* cmd_gpus.c — placeholder until the subcommand lands. */
#include "cli.h"
#include <stdio.h>
int bt_cmd_gpus(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "blocktune gpus: not built yet\n");
    return 1;
}
