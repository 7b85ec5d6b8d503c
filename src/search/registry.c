/* SPDX-License-Identifier: Apache-2.0 */
/*
 * registry.c — the table of search strategies (FFTW-solver style: adding a strategy is one file
 * and one line here) and the choice of the default one.
 */
#include "search/strategy.h"

#include "core/util.h"

extern const bt__strategy bt__strategy_exhaustive;
extern const bt__strategy bt__strategy_random;
extern const bt__strategy bt__strategy_model;
extern const bt__strategy bt__strategy_coordinate;
extern const bt__strategy bt__strategy_anneal;
extern const bt__strategy bt__strategy_forest;

static const bt__strategy *const table[] = {
    &bt__strategy_exhaustive, &bt__strategy_random, &bt__strategy_model,
    &bt__strategy_coordinate, &bt__strategy_anneal, &bt__strategy_forest,
};

const bt__strategy *const *bt__strategies(size_t *count)
{
    *count = BT__ARRAY_LEN(table);
    return table;
}

const bt__strategy *bt__strategy_find(const char *name)
{
    for (size_t i = 0; i < BT__ARRAY_LEN(table); i++)
        if (bt__streq_nocase(table[i]->name, name))
            return table[i];
    return NULL;
}

const bt__strategy *bt__strategy_default(uint64_t nvalid, uint64_t exhaustive_max)
{
    if (!exhaustive_max)
        exhaustive_max = BT__SEARCH_EXHAUSTIVE_MAX_DEFAULT;
    return bt__strategy_find(nvalid <= exhaustive_max ? "exhaustive" : BT__SEARCH_DEFAULT_LARGE);
}
