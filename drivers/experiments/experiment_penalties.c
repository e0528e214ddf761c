/* experiment_penalties.c — `atf experiment penalties` (paper Fig. 2).
 *
 * Tabulates the effective penalty ω̃ (eq. 12) of several penalties against v², on linear axes
 * (the paper's view) and on log–log axes (where the sub-quadratic tails show as slopes below 2),
 * and the proximal maps prox_{tω̃} that the solver applies to singular values. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "atf_cli.h"
#include "atf_penalty.h"
#include "atf_solver.h"
#include "experiment.h"
#include "plot.h"
#include "rowstore.h"

enum { MAXPEN = 8 };

typedef struct {
    const char *specs[MAXPEN];
    int nspecs;
    double from, to, t;
    long num;
    const char *out;
    int json;
} pen_args;

static void usage(FILE *out)
{
    fprintf(out,
            "usage: atf experiment penalties [--penalty SPEC]... [--from A] [--to B] [--num K]\n"
            "                                [--t T] [--out DIR] [--json]\n"
            "\n"
            "Effective penalties (eq. 12) and prox maps, the paper's Figure 2. Default penalties:\n"
            "sq, abs and sq+abs (omega1 = (v-1)^2, omega2 = |v-1| and their joint penalty), always\n"
            "drawn against v^2. Writes DIR/penalties.csv (spec,v,omega_tilde,z,prox,s1,s2) and\n"
            "DIR/penalties.{svg,png} (default DIR out/penalties); prints the tail slopes\n"
            "d log omega_tilde / d log v between v = 1e2 and 1e3 (2 would be quadratic).\n"
            "  --from/--to/--num  grid of v for the linear panels (default 0, 5, 201)\n"
            "  --t T              prox step (default 1)\n");
}

static atf_error parse_args(int argc, char **argv, pen_args *a, char *err)
{
    *a = (pen_args){{NULL}, 0, 0.0, 5.0, 1.0, 201, "out/penalties", 0};
    for (int i = 1; i < argc; i++) {
        const char *opt = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        atf_error e = ATF_OK;
        if (!strcmp(opt, "--json")) {
            a->json = 1;
            continue;
        }
        if (opt[0] != '-' || !opt[1]) {
            atf_errorf(err, "unexpected argument '%s'", opt);
            return ATF_E_USAGE;
        }
        if (!val) {
            atf_errorf(err, "%s needs a value", opt);
            return ATF_E_USAGE;
        }
        if (!strcmp(opt, "--penalty")) {
            if (a->nspecs >= MAXPEN) {
                atf_errorf(err, "--penalty: at most %d", MAXPEN);
                return ATF_E_USAGE;
            }
            a->specs[a->nspecs++] = val;
        } else if (!strcmp(opt, "--from"))
            e = atf_cli_double(opt, val, &a->from, err);
        else if (!strcmp(opt, "--to"))
            e = atf_cli_double(opt, val, &a->to, err);
        else if (!strcmp(opt, "--t"))
            e = atf_cli_double(opt, val, &a->t, err);
        else if (!strcmp(opt, "--num"))
            e = atf_cli_int(opt, val, 2, 100000, &a->num, err);
        else if (!strcmp(opt, "--out"))
            a->out = val;
        else {
            atf_errorf(err, "unknown option '%s' (atf experiment penalties --help)", opt);
            return ATF_E_USAGE;
        }
        if (e)
            return e;
        i++;
    }
    if (!a->nspecs) {
        a->specs[0] = "sq";
        a->specs[1] = "abs";
        a->specs[2] = "sq+abs";
        a->nspecs = 3;
    }
    if (a->from < 0 || a->to <= a->from || !(a->t > 0)) {
        atf_errorf(err, "need 0 <= --from < --to and --t > 0");
        return ATF_E_USAGE;
    }
    return ATF_OK;
}

/* Slope of log ω̃ against log v between v1 and v2. */
static double tail_slope(const atf_penalty *pen, double v1, double v2)
{
    return (log(atf_penalty_value(pen, v2, NULL)) - log(atf_penalty_value(pen, v1, NULL))) /
           (log(v2) - log(v1));
}

int atf_experiment_penalties(int argc, char **argv)
{
    char err[ATF_ERRLEN] = "";
    if (atf_cli_wants_help(argc, argv)) {
        usage(stdout);
        return 0;
    }
    pen_args a;
    atf_error e = parse_args(argc, argv, &a, err);
    atf_penalty pens[MAXPEN];
    for (int k = 0; !e && k < a.nspecs; k++)
        if (atf_penalty_parse(a.specs[k], &pens[k], err))
            e = ATF_E_USAGE;
    if (!e)
        e = atf_cli_output_dir(a.out, err);
    if (e)
        return atf_cli_fail("experiment penalties", e, err);

    const int n = (int)a.num, nlog = 121;
    int ns = a.nspecs;
    double *v = malloc(sizeof(double) * (size_t)n), *vl = malloc(sizeof(double) * nlog);
    double *w = malloc(sizeof(double) * (size_t)(ns + 1) * n);
    double *px = malloc(sizeof(double) * (size_t)(ns + 1) * n);
    double *wl = malloc(sizeof(double) * (size_t)(ns + 1) * nlog);
    size_t cap = 256, len = 0; /* a line: the spec, 6 numbers of at most 17 chars, separators */
    for (int k = 0; k < ns; k++)
        cap += (size_t)n * (2 * strlen(a.specs[k]) + 2 + 6 * 18 + 8); /* spec quoted: ≤ 2×+2 */
    char *csv = malloc(cap);
    if (!v || !vl || !w || !px || !wl || !csv) {
        free(v), free(vl), free(w), free(px), free(wl), free(csv);
        return atf_cli_fail("experiment penalties", ATF_E_NOMEM, "out of memory");
    }
    len += (size_t)snprintf(csv + len, cap - len, "spec,v,omega_tilde,z,prox,s1,s2\n");
    for (int i = 0; i < n; i++)
        v[i] = a.from + (a.to - a.from) * i / (n - 1);
    for (int i = 0; i < nlog; i++)
        vl[i] = pow(10.0, -1.0 + 3.0 * i / (nlog - 1));
    for (int k = 0; k < ns; k++) {
        for (int i = 0; i < n; i++) {
            double z, s1, s2;
            w[k * n + i] = atf_penalty_value(&pens[k], v[i], &z);
            px[k * n + i] = atf_penalty_prox(&pens[k], v[i], a.t, NULL);
            atf_penalty_joint(&pens[k], z, &s1, &s2);
            len += (size_t)atf_csv_field(a.specs[k], csv + len, cap - len);
            len += (size_t)snprintf(csv + len, cap - len, ",%.10g,%.10g,%.10g,%.10g,%.10g,%.10g\n",
                                    v[i], w[k * n + i], z, px[k * n + i], s1, s2);
        }
        for (int i = 0; i < nlog; i++)
            wl[k * nlog + i] = atf_penalty_value(&pens[k], vl[i], NULL);
    }
    for (int i = 0; i < n; i++) { /* the quadratic reference v² and its prox v/(1+2t) */
        w[ns * n + i] = v[i] * v[i];
        px[ns * n + i] = v[i] / (1.0 + 2.0 * a.t);
    }
    for (int i = 0; i < nlog; i++)
        wl[ns * nlog + i] = vl[i] * vl[i];

    char path[1200];
    snprintf(path, sizeof path, "%s/penalties.csv", a.out);
    e = atf_write_text(path, csv, err);

    atf_plot_panel panels[3];
    memset(panels, 0, sizeof panels);
    char ptitle[64];
    snprintf(ptitle, sizeof ptitle, "prox of t·ω̃, t = %g", a.t);
    const char *titles[3] = {"effective penalty ω̃(v)", "log–log: sub-quadratic tails", ptitle};
    const char *ylabels[3] = {"ω̃(v)", "ω̃(v)", "prox(v)"};
    for (int p = 0; p < 3; p++) {
        atf_plot_panel *pl = &panels[p];
        pl->kind = ATF_PANEL_LINES;
        pl->title = titles[p];
        pl->xlabel = "v";
        pl->ylabel = ylabels[p];
        pl->logx = pl->logy = p == 1;
        pl->legend = p == 1 ? ATF_LEGEND_BOTTOM_RIGHT : ATF_LEGEND_TOP_LEFT;
        const double *x = p == 1 ? vl : v;
        int m = p == 1 ? nlog : n;
        const double *ybase = p == 0 ? w : p == 1 ? wl : px;
        for (int k = 0; k <= ns; k++) {
            pl->series[pl->nseries++] = (atf_plot_series){
                k < ns ? a.specs[k] : (p == 2 ? "v/(1+2t)  (v²)" : "v²"), x, ybase + (size_t)k * m,
                NULL, m, k < ns ? k : 6, k < ns ? 0 : 1, 0, 0};
        }
        if (p == 0) { /* clip the quadratic so the sub-quadratic curves stay readable */
            pl->fixed_y = 1;
            pl->ymin = 0;
            double top = 0;
            for (int k = 0; k < ns; k++)
                top = fmax(top, w[k * n + n - 1]);
            pl->ymax = 1.15 * fmax(top, 1.0);
        }
    }
    atf_plot_figure fig = {"Effective penalties (paper Fig. 2)", 3, 1, 1800, 560, 3, panels, 0};
    snprintf(path, sizeof path, "%s/penalties", a.out);
    if (!e)
        e = atf_plot_save(&fig, path, err);

    if (!e) {
        if (a.json) {
            json_t *o = json_object(), *slopes = json_object();
            for (int k = 0; k < ns; k++)
                json_object_set_new(slopes, a.specs[k],
                                    atf_json_number(tail_slope(&pens[k], 1e2, 1e3)));
            json_object_set_new(o, "status", json_string("done"));
            snprintf(path, sizeof path, "%s/penalties.csv", a.out);
            json_object_set_new(o, "csv", atf_json_text(path));
            snprintf(path, sizeof path, "%s/penalties.svg", a.out);
            json_object_set_new(o, "figure", atf_json_text(path));
            json_object_set_new(o, "tail_slopes", slopes);
            atf_cli_print_json(o);
        } else {
            printf("| penalty | ω̃(1) | ω̃(5) | tail slope (v = 1e2..1e3) |\n|---|---|---|---|\n");
            for (int k = 0; k < ns; k++)
                printf("| `%s` | %.4f | %.4f | %.3f |\n", a.specs[k],
                       atf_penalty_value(&pens[k], 1.0, NULL), atf_penalty_value(&pens[k], 5.0, NULL),
                       tail_slope(&pens[k], 1e2, 1e3));
            printf("| v² | 1 | 25 | 2 |\n");
        }
    }
    free(v), free(vl), free(w), free(px), free(wl), free(csv);
    return e ? atf_cli_fail("experiment penalties", e, err) : 0;
}
