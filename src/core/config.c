/* SPDX-License-Identifier: Apache-2.0 */
/*
 * config.c — the public face of a config (bt_config is opaque since 0.2): its parameters' count,
 * names and values, a value by name, and its text and JSON forms, made on request and kept in
 * the object. A public config is a bt__config_obj (space.h); bt_kdesc_parse_config makes new
 * ones and a result holds its winner's.
 */
#include "core/space.h"

#include "core/kdesc.h"
#include "core/util.h"

#include <stdlib.h>
#include <string.h>

static const bt__config_obj *obj(const bt_config *c) { return (const bt__config_obj *)c; }

bt_config *bt__config_new(const bt__space *s, const bt_config *c)
{
    bt__config_obj *o = calloc(1, sizeof *o);
    if (!o)
        return NULL;
    o->c = *c;
    o->space = s;
    return &o->c;
}

void bt__config_obj_clear(bt__config_obj *o)
{
    free(o->text);
    free(o->json);
    o->text = o->json = NULL;
}

void bt_config_destroy(bt_config *c)
{
    if (!c)
        return;
    bt__config_obj_clear((bt__config_obj *)c);
    free(c);
}

int bt_config_count(const bt_config *c) { return c ? c->nparams : 0; }

const char *bt_config_name(const bt_config *c, int i)
{
    return c && i >= 0 && i < c->nparams ? obj(c)->space->params[i].name : NULL;
}

int64_t bt_config_value(const bt_config *c, int i)
{
    return c && i >= 0 && i < c->nparams ? c->v[i] : 0;
}

bt_status bt_config_get(const bt_config *c, const char *name, int64_t *value, bt_diag *diag)
{
    if (!c || !name || !value)
        return BT_INVALID_ARG;
    const bt__space *s = obj(c)->space;
    int i = bt__space_find(s, name);
    if (i < 0) {
        char names[BT_MAX_PARAMS * (BT_NAME_MAX + 2)] = "";
        size_t n = 0;
        for (int j = 0; j < s->nparams && n < sizeof names; j++)
            n += (size_t)snprintf(names + n, sizeof names - n, "%s%s", j ? ", " : "",
                                  s->params[j].name);
        bt__diag_set(diag, "no parameter '%s' (the parameters are %s)", name, names);
        return BT_NOT_FOUND;
    }
    *value = c->v[i];
    return BT_OK;
}

const char *bt_config_text(const bt_config *c)
{
    if (!c)
        return NULL;
    bt__config_obj *o = (bt__config_obj *)c;
    if (!o->text) {
        size_t size = (size_t)o->space->nparams * (BT_NAME_MAX + 24) + 1;
        if ((o->text = malloc(size)))
            bt__config_format(o->space, c, ",", o->text, size);
    }
    return o->text;
}

const char *bt_config_json(const bt_config *c)
{
    if (!c)
        return NULL;
    bt__config_obj *o = (bt__config_obj *)c;
    if (!o->json)
        o->json = bt__config_json(o->space, c);
    return o->json;
}

bt_status bt_kdesc_parse_config(const bt_kdesc *k, const char *text, bt_config **out,
                                bt_diag *diag)
{
    if (!out)
        return BT_INVALID_ARG;
    *out = NULL;
    bt_config c;
    bt_status st = bt__kdesc_parse_config(k, text, &c, diag);
    if (st)
        return st;
    return (*out = bt__config_new(&k->space, &c)) ? BT_OK : BT_NOMEM;
}
