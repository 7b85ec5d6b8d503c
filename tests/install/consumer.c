/* SPDX-License-Identifier: Apache-2.0 */
/*
 * consumer.c — a program outside the tree that uses an installed blocktune: the version, the
 * hardware table (from the install's data folder) and the plan of a built-in kernel. Built by
 * tests/install/install.sh with pkg-config (shared and static) and with find_package.
 *
 *   usage: consumer [GPU-NAME]   (prints the table's source; exit 0 when the GPU is known)
 */
#include <blocktune.h>

#include <stdio.h>

int main(int argc, char **argv)
{
    bt_diag d = BT_DIAG_INIT;
    bt_gpudb *db = NULL;
    const bt_gpu *g = NULL;
    if (bt_gpudb_load_default(&db, &d) != BT_OK ||
        bt_gpudb_find(db, argc > 1 ? argv[1] : "h200", &g, &d) != BT_OK) {
        fprintf(stderr, "consumer: %s\n", d.msg);
        bt_gpudb_destroy(db);
        return 1;
    }
    bt_kdesc *k = NULL;
    bt_problem *p = NULL;
    bt_plan *pl = NULL;
    int ok = bt_kdesc_builtin("softmax", &k, &d) == BT_OK && bt_problem_create(k, &p) == BT_OK &&
             bt_plan_create(k, p, g, NULL, &pl, &d) == BT_OK;
    printf("consumer: blocktune %s, %s from %s, plan %s\n", bt_version(), g->name, g->source,
           ok ? "ok" : d.msg);
    bt_plan_destroy(pl);
    bt_problem_destroy(p);
    bt_kdesc_destroy(k);
    bt_gpudb_destroy(db);
    return ok ? 0 : 1;
}
