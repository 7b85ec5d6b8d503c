/* cmd_simulate.c — placeholder until the subcommand lands. */
#include "cli.h"
#include <stdio.h>
int bt_cmd_simulate(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "blocktune simulate: not built yet\n");
    return 1;
}
