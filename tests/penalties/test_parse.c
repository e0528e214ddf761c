/* test_parse.c — the spec grammar: accepted forms, canonical format round trips, every error
 * case returning ATF_E_INPUT with a message that quotes the spec and gives the reason, and the
 * structural predicates (convexity, nuclear). */
#include "pen_test.h"

#include <string.h>

static int same_omega(const atf_omega *a, const atf_omega *b)
{
    return a->family == b->family && a->scale == b->scale && a->auto_scale == b->auto_scale &&
           (a->family != ATF_FAMILY_POW || a->p == b->p);
}

static int same_penalty(const atf_penalty *a, const atf_penalty *b)
{
    return same_omega(&a->w1, &b->w1) && same_omega(&a->w2, &b->w2);
}

/* parse(spec) succeeds, formats to `canonical`, and the canonical string parses back to the
 * same penalty and formats to itself. */
static void check_canonical(const char *spec, const char *canonical)
{
    atf_penalty pen, again;
    char err[ATF_ERRLEN] = "", buf[ATF_PENALTY_SPECLEN], buf2[ATF_PENALTY_SPECLEN];
    atf_error e = atf_penalty_parse(spec, &pen, err);
    CHECK(e == ATF_OK, "parse \"%s\" failed: %s", spec, err);
    if (e != ATF_OK)
        return;
    int n = atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(n == (int)strlen(buf), "format \"%s\" returned %d for \"%s\"", spec, n, buf);
    CHECK(strcmp(buf, canonical) == 0, "format of \"%s\" is \"%s\", expected \"%s\"", spec, buf,
          canonical);
    e = atf_penalty_parse(buf, &again, err);
    CHECK(e == ATF_OK && same_penalty(&pen, &again), "\"%s\" does not round-trip", buf);
    atf_penalty_format(&again, buf2, sizeof buf2);
    CHECK(strcmp(buf, buf2) == 0, "format not idempotent: \"%s\" vs \"%s\"", buf, buf2);
}

static void check_error(const char *spec, const char *reason)
{
    atf_penalty pen = atf_penalty_default();
    char err[ATF_ERRLEN] = "";
    atf_error e = atf_penalty_parse(spec, &pen, err);
    CHECK(e == ATF_E_INPUT, "\"%s\" should fail with ATF_E_INPUT, got %d", spec, (int)e);
    CHECK(strstr(err, reason) != NULL, "message for \"%s\" lacks \"%s\": %s", spec, reason, err);
    char quoted[160];
    snprintf(quoted, sizeof quoted, "\"%s\"", spec);
    CHECK(strstr(err, quoted) != NULL, "message for \"%s\" does not quote it: %s", spec, err);
}

static void test_accepted(void)
{
    check_canonical("sq", "sq");
    check_canonical("  sq  ", "sq");
    check_canonical("sq:scale=1", "sq");
    check_canonical("sq:scale=0.1", "sq:scale=0.1");
    check_canonical("abs:scale=2.5", "abs:scale=2.5");
    check_canonical("pow:p=1.5,scale=0.1", "pow:p=1.5,scale=0.1");
    check_canonical("pow:scale=0.1,p=1.5", "pow:p=1.5,scale=0.1");
    check_canonical("pow:p=1e+3", "pow:p=1000");
    check_canonical("pow:p=2", "pow:p=2");
    check_canonical("zsq:scale=1e-8", "zsq:scale=1e-08");
    check_canonical("logsq", "logsq");
    check_canonical("balanced + balanced:scale=2", "balanced+balanced:scale=2");
    check_canonical("fixed", "fixed");
    check_canonical("nuclear:scale=4", "nuclear:scale=4");
    check_canonical("sq+sq", "sq+sq");
    check_canonical("sq + abs:scale=2", "sq+abs:scale=2");
    check_canonical("sq   +abs", "sq+abs");
    check_canonical("sq+fixed", "sq");
    check_canonical("fixed+sq", "fixed+sq");
    check_canonical("fixed+fixed", "fixed");
    check_canonical("sq+fixed:scale=2", "sq+fixed:scale=2");
    check_canonical("pow:p=0.1+pow:p=0.30000000000000004", "pow:p=0.1+pow:p=0.30000000000000004");
    check_canonical("sq:scale=0x1p-3", "sq:scale=0.125");

    /* structure of a single term and of fixed + ω */
    atf_penalty pen = parse_or_die("abs:scale=3");
    CHECK(pen.w1.family == ATF_FAMILY_ABS && pen.w1.scale == 3.0, "abs:scale=3 sets w1");
    CHECK(pen.w2.family == ATF_FAMILY_FIXED, "a single term leaves w2 = fixed");
    pen = parse_or_die("fixed + pow:p=3");
    CHECK(pen.w1.family == ATF_FAMILY_FIXED && pen.w2.family == ATF_FAMILY_POW &&
              pen.w2.p == 3.0,
          "fixed+pow keeps the order (w1 = fixed, w2 = pow)");
    atf_penalty def = atf_penalty_default(), sq = parse_or_die("sq");
    CHECK(same_penalty(&def, &sq), "default penalty is sq");
}

/* Random round trips: numbers that need all 17 digits survive format/parse exactly. */
static void test_random_round_trips(void)
{
    static const char *const families[] = {"sq", "abs", "zsq", "logsq", "fixed"};
    atf_test_rng rng;
    atf_test_rng_seed(&rng, 12345);
    for (int i = 0; i < 500; ++i) {
        const double scale = atf_test_uniform(&rng) * 1e3 + 1e-9;
        const double p = atf_test_uniform(&rng) * 5.0 + 1e-9;
        atf_penalty pen = {{ATF_FAMILY_POW, p, scale, 0}, {ATF_FAMILY_FIXED, 0.0, 1.0, 0}};
        if (i % 2)
            pen.w2 = (atf_omega){ATF_FAMILY_SQ, 0.0, scale * 3.0, 0};
        if (i % 3 == 0) {
            char spec[64];
            snprintf(spec, sizeof spec, "%s", families[i % 5]);
            pen.w1 = parse_or_die(spec).w1;
            pen.w1.scale = scale;
        }
        char buf[ATF_PENALTY_SPECLEN], err[ATF_ERRLEN];
        atf_penalty_format(&pen, buf, sizeof buf);
        atf_penalty back;
        CHECK(atf_penalty_parse(buf, &back, err) == ATF_OK && same_penalty(&pen, &back),
              "random round trip failed for \"%s\"", buf);
    }
}

static void test_errors(void)
{
    check_error("", "empty spec");
    check_error("   ", "empty spec");
    check_error("pow", "requires p");
    check_error("pow:scale=2", "requires p");
    check_error("pow:p=0", "p must be > 0");
    check_error("pow:p=-1.5", "p must be > 0");
    check_error("sq:scale=0", "scale must be > 0");
    check_error("sq:scale=-2", "scale must be > 0");
    check_error("sq:scale=nan", "not a finite number");
    check_error("sq:scale=inf", "not a finite number");
    check_error("pow:p=1e999", "not a finite number");
    check_error("square", "unknown family");
    check_error("Sq", "unknown family");
    check_error("sq:gamma=1", "unknown key");
    check_error("sq:p=2", "only pow takes p");
    check_error("pow:p=2,p=3", "given twice");
    check_error("sq:scale=1,scale=2", "given twice");
    check_error("sq:scale=", "needs a number");
    check_error("sq:scale", "must be followed by '='");
    check_error("sq:", "empty setting");
    check_error("sq:scale=2,", "empty setting");
    check_error("sq:scale=2x", "unexpected character 'x'");
    check_error("sq,scale=2", "settings follow ':'");
    check_error("sq+", "empty term");
    check_error("+sq", "empty term");
    check_error("sq++abs", "empty term");
    check_error("sq+abs+zsq", "more than two terms");
    check_error("nuclear+sq", "nuclear cannot be joined");
    check_error("sq + nuclear", "nuclear cannot be joined");
    check_error("fixed+nuclear", "nuclear cannot be joined");
    check_error("sq abs", "unexpected character 'a'");

    /* NULL spec and NULL err are tolerated */
    atf_penalty pen;
    CHECK(atf_penalty_parse(NULL, &pen, NULL) == ATF_E_INPUT, "NULL spec is an input error");
    CHECK(atf_penalty_parse("pow", &pen, NULL) == ATF_E_INPUT, "NULL err buffer is allowed");
}

static void test_predicates(void)
{
    static const struct {
        const char *spec;
        int convex;
    } table[] = {
        {"fixed", 1},         {"sq", 1},              {"sq:scale=1e-4", 1},   {"zsq", 1},
        {"nuclear", 1},       {"pow:p=2", 1},         {"pow:p=3.5", 1},       {"abs", 0},
        {"logsq", 0},         {"pow:p=1.999", 0},     {"pow:p=0.5", 0},       {"fixed+sq", 1},
        {"fixed+abs", 0},     {"sq+fixed", 1},        {"sq+sq", 0},           {"sq+abs", 0},
        {"zsq+zsq", 0},       {"pow:p=4+pow:p=4", 1}, {"pow:p=3+pow:p=6", 1}, {"pow:p=3+pow:p=5", 0},
        {"sq+pow:p=100", 0},  {"logsq+sq", 0},  {"balanced", 1}, {"balanced:scale=1e-3", 1},
        {"balanced+balanced", 0}, {"balanced+pow:p=100", 0}, {"fixed+balanced", 1},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; ++i) {
        atf_penalty pen = parse_or_die(table[i].spec);
        CHECK(atf_penalty_is_convex(&pen) == table[i].convex, "is_convex(%s) should be %d",
              table[i].spec, table[i].convex);
    }
    atf_penalty nuc = parse_or_die("nuclear:scale=2"), sq = parse_or_die("sq");
    CHECK(atf_penalty_is_nuclear(&nuc) == 1 && atf_penalty_is_nuclear(&sq) == 0, "is_nuclear");
}

/* Templates: scale=auto is a parsed mark, refused by atf_penalty_parse; the formatter writes
 * it back (parse_template(format(p)) == p), and atf_penalty_resolve_auto_scale resolves it. */
static void check_template(const char *spec, const char *canonical, const char *resolved)
{
    atf_penalty pen, again, plain;
    char err[ATF_ERRLEN] = "", buf[ATF_PENALTY_SPECLEN];
    CHECK(atf_penalty_parse_template(spec, &pen, err) == ATF_OK, "template %s: %s", spec, err);
    CHECK(atf_penalty_has_auto_scale(&pen), "%s has scale=auto", spec);
    atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(!strcmp(buf, canonical), "format of template %s is %s, expected %s", spec, buf,
          canonical);
    CHECK(atf_penalty_parse_template(buf, &again, err) == ATF_OK && same_penalty(&pen, &again),
          "template %s does not round-trip", buf);
    CHECK(atf_penalty_parse(spec, &plain, err) == ATF_E_INPUT && strstr(err, "scale=auto"),
          "atf_penalty_parse accepted %s: %s", spec, err);
    CHECK(atf_penalty_resolve_auto_scale(&pen, 0.25) == ATF_OK &&
              !atf_penalty_has_auto_scale(&pen), "resolve_auto_scale resolves %s", spec);
    atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(!strcmp(buf, resolved), "%s resolved is %s, expected %s", spec, buf, resolved);
    CHECK(atf_penalty_parse(buf, &again, err) == ATF_OK && same_penalty(&pen, &again),
          "resolved %s does not round-trip: %s", buf, err);
}

static void test_templates(void)
{
    check_template("sq:scale=auto", "sq:scale=auto", "sq:scale=0.25");
    check_template("pow:scale=auto,p=1.5", "pow:p=1.5,scale=auto", "pow:p=1.5,scale=0.25");
    check_template("sq:scale=auto + abs:scale=auto", "sq:scale=auto+abs:scale=auto",
                   "sq:scale=0.25+abs:scale=0.25");
    /* only the marked terms are resolved */
    check_template("sq:scale=auto+abs:scale=3", "sq:scale=auto+abs:scale=3",
                   "sq:scale=0.25+abs:scale=3");
    check_template("fixed+zsq:scale=auto", "fixed+zsq:scale=auto", "fixed+zsq:scale=0.25");
    check_template("nuclear:scale=auto", "nuclear:scale=auto", "nuclear:scale=0.25");

    atf_penalty pen;
    char err[ATF_ERRLEN] = "", buf[ATF_PENALTY_SPECLEN];
    CHECK(atf_penalty_parse_template("sq:scale=autox", &pen, err) == ATF_E_INPUT,
          "scale=autox is not auto");
    CHECK(atf_penalty_parse_template("sq:scale=auto,scale=2", &pen, err) == ATF_E_INPUT &&
              strstr(err, "given twice"), "scale=auto counts as the scale: %s", err);
    CHECK(atf_penalty_parse_template("nuclear:scale=auto+sq", &pen, err) == ATF_E_INPUT,
          "templates keep the nuclear rule");
    CHECK(atf_penalty_parse_template("pow:p=auto", &pen, err) == ATF_E_INPUT, "p=auto refused");

    pen = parse_or_die("sq");
    CHECK(atf_penalty_resolve_auto_scale(&pen, 2.0) == ATF_OK && pen.w1.scale == 1.0,
          "resolving a penalty without scale=auto changes nothing");
    CHECK(atf_penalty_parse_template("abs:scale=auto", &pen, err) == ATF_OK &&
              atf_penalty_resolve_auto_scale(&pen, 0.0) == ATF_E_USAGE && pen.w1.auto_scale,
          "resolve_auto_scale refuses gamma = 0 and leaves the mark");

    /* editing a parsed penalty: the scale axis of a spec (every term; fixed only when marked) */
    pen = parse_or_die("sq:scale=2+abs:scale=3");
    CHECK(atf_penalty_set_scale(&pen, 0.5) == ATF_OK, "set_scale 0.5");
    atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(!strcmp(buf, "sq:scale=0.5+abs:scale=0.5"), "set_scale sets every term: %s", buf);
    pen = parse_or_die("pow:scale=3,p=2+abs");
    CHECK(atf_penalty_set_scale(&pen, 0.1) == ATF_OK, "set_scale 0.1");
    atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(!strcmp(buf, "pow:p=2,scale=0.1+abs:scale=0.1"), "scaled joint: %s", buf);
    pen = parse_or_die("sq");
    CHECK(atf_penalty_set_scale(&pen, 1e-4) == ATF_OK, "set_scale 1e-4");
    atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(!strcmp(buf, "sq:scale=0.0001"), "a single term stays single: %s", buf);
    atf_penalty_set_auto_scale(&pen);
    atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(!strcmp(buf, "sq:scale=auto"), "set_auto_scale: %s", buf);
    pen = parse_or_die("fixed");
    CHECK(atf_penalty_set_scale(&pen, 2.0) == ATF_OK, "set_scale on fixed");
    atf_penalty_format(&pen, buf, sizeof buf);
    CHECK(!strcmp(buf, "fixed"), "fixed has no scale to set: %s", buf);
    atf_penalty before = parse_or_die("zsq:scale=2");
    pen = before;
    CHECK(atf_penalty_set_scale(&pen, 0.0) == ATF_E_USAGE &&
              atf_penalty_set_scale(&pen, -1.0) == ATF_E_USAGE &&
              atf_penalty_set_scale(&pen, INFINITY) == ATF_E_USAGE &&
              atf_penalty_set_scale(&pen, NAN) == ATF_E_USAGE && same_penalty(&pen, &before),
          "set_scale refuses non-positive and non-finite scales and leaves pen as it was");
}

/* The family table: every name parses to its own family, the list has no repeats. */
static void test_family_table(void)
{
    int n = atf_penalty_family_count();
    CHECK(n == 8, "8 families, got %d", n);
    for (int i = 0; i < n; ++i) {
        const char *name = atf_penalty_family_name(i);
        atf_penalty pen;
        char err[ATF_ERRLEN], spec[32];
        snprintf(spec, sizeof spec, "%s%s", name ? name : "?",
                 name && !strcmp(name, "pow") ? ":p=2" : "");
        CHECK(name && atf_penalty_parse(spec, &pen, err) == ATF_OK, "family %d (%s) parses", i,
              spec);
        for (int j = 0; j < i; ++j)
            CHECK(strcmp(atf_penalty_family_name(j), name), "family %s listed twice", name);
    }
    CHECK(atf_penalty_family_name(-1) == NULL && atf_penalty_family_name(n) == NULL,
          "names outside the table are NULL");
}

int main(void)
{
    test_accepted();
    test_templates();
    test_family_table();
    test_random_round_trips();
    test_errors();
    test_predicates();
    return atf_test_finish("test_parse");
}
