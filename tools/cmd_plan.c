/* cmd_plan.c — placeholder until the subcommand lands. */
#include "cli.h"
#include <stdio.h>
int bt_cmd_plan(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "blocktune plan: not built yet\n");
    return 1;
}
