/* SPDX-License-Identifier: Apache-2.0 */
/*
 * report_html.c — the tune as one self-contained HTML page (bt_result_write_html): the result's
 * tune JSON document (report.c) drawn by the report layer (src/report, docs/report.md), the same
 * page `blocktune report` makes from the JSON file.
 */
#include "engine/report.h"

#include "report/report.h"

#include <stdlib.h>

bt_status bt_result_write_html(const bt_result *r, FILE *f)
{
    /* the document read back from its --json text: the page holds the file's numbers */
    char *text = bt__result_json_text(r);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!o)
        return BT_NOMEM;
    bt__report_doc d = {o, "this tune (blocktune tune --html)"};
    bt_status st = bt__report_html(&d, 1, NULL, f, NULL);
    json_decref(o);
    return st;
}
