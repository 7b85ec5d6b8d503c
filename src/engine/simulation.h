/* SPDX-License-Identifier: Apache-2.0 */
/*
 * simulation.h — the public bt_simulation object (api_simulate.c) as its writers
 * (simulate_report.c) read it: per recorded space, its facts and each strategy's statistics.
 */
#ifndef BT_ENGINE_SIMULATION_H
#define BT_ENGINE_SIMULATION_H

#include "blocktune.h"
#include "search/simulate.h"
#include "search/strategy.h"

#define BT__SIM_MAX_STRATEGIES 64

/* One strategy's outcome on one space. */
typedef struct bt__sim_row {
    const bt__strategy *s;
    bt_status st; /* BT_OK, or BT_UNSUPPORTED (why says why) */
    char why[1200];
    bt__sim_stats stats;
} bt__sim_row;

/* One recorded space, simulated. */
typedef struct bt__sim_space {
    char *name;        /* how the reports name it: the path, or "store:PATH" */
    char kernel[128], device[128];
    bt__sim_space_info info;
    bt__sim_row rows[BT__SIM_MAX_STRATEGIES];
    size_t nrows;
} bt__sim_space;

struct bt_simulation {
    bt__sim_options o;
    char *strategy; /* NULL: every strategy */
    bt__sim_space *spaces;
    size_t n, cap;
};

#endif
