/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_csv.c — the tune as CSV (bt_result_write_csv): one row per measured config, the ones
 * that measured fastest first with their rank, then the failures in the order they were measured;
 * every column of the text table and the numbers behind it. Fields are quoted as RFC 4180 says
 * (a field with a comma, a quote or a line break is put in quotes, quotes doubled); lines end in
 * LF as `blocktune plan --csv` writes them.
 */
#include "engine/report.h"

#include "core/cfgstatus.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A text field, quoted when it must be. */
static void field(FILE *f, const char *s, bool last)
{
    s = s ? s : "";
    if (strpbrk(s, ",\"\r\n")) {
        fputc('"', f);
        for (; *s; s++) {
            if (*s == '"')
                fputc('"', f);
            fputc(*s, f);
        }
        fputc('"', f);
    } else
        fputs(s, f);
    fputc(last ? '\n' : ',', f);
}

static void row(const bt_result *r, FILE *f, size_t i, size_t rank, bool known)
{
    const bt__entry *e = &r->e[i];
    bt__row_cols c;
    bt__result_row(r, i, &c);
    if (rank)
        fprintf(f, "%zu,", rank);
    else
        fputc(',', f);
    field(f, c.cfg, false);
    for (int p = 0; p < r->k->space.nparams; p++)
        fprintf(f, "%lld,", (long long)e->ev.cfg.v[p]);
    field(f, c.status, false);
    fprintf(f, "%lld,", c.smem);
    if (e->res.regs_per_thread > 0)
        fprintf(f, "%d,", e->res.regs_per_thread);
    else
        fputc(',', f);
    fprintf(f, "%lld,%lld,", (long long)e->ev.regs, c.blk_model);
    if (c.blk_exact >= 0)
        fprintf(f, "%d,", c.blk_exact);
    else
        fputc(',', f);
    fprintf(f, "%.1f,", c.occupancy * 100);
    if (e->status == BT__CS_OK) {
        fprintf(f, "%.3f,%.3f,%.3f,%.3f,%.3f,%d,%.4g,%.4g,", e->st.median * 1e3, e->st.p20 * 1e3,
                e->st.p80 * 1e3, e->st.min * 1e3, e->st.mad * 1e3, e->st.n, e->gbps, e->tflops);
        if (known)
            fprintf(f, "%.2f,", e->eff * 100);
        else
            fputc(',', f);
    } else
        fputs(",,,,,,,,,", f);
    field(f, e->status == BT__CS_OK ? "" : e->error, true);
}

bt_status bt_result_write_csv(const bt_result *r, FILE *f)
{
    bool mem;
    bool known = bt__result_roofline_known(r, &mem);
    fputs("rank,config,", f);
    for (int p = 0; p < r->k->space.nparams; p++) {
        fputs(r->k->space.params[p].name, f);
        fputc(',', f);
    }
    fputs("status,smem_bytes,regs_per_thread,regs_estimate,blocks_per_sm,blocks_per_sm_exact,"
          "occupancy_pct,median_us,p20_us,p80_us,min_us,mad_us,reps,gbps,tflops,efficiency_pct,"
          "error\n", f);
    size_t m;
    size_t *order = bt__result_ok_order(r, &m);
    if (!order && r->n)
        return BT_NOMEM;
    for (size_t j = 0; j < m; j++)
        row(r, f, order[j], j + 1, known);
    free(order);
    for (size_t i = 0; i < r->n; i++)
        if (r->e[i].status != BT__CS_OK)
            row(r, f, i, 0, known);
    return ferror(f) ? BT_IO : BT_OK;
}
