/*
 * Events (DESIGN 4.1): names, validation, the JSON form used by `log` and by
 * eval's inline states, RFC 3339 time, and canonical JSON.
 *
 * The JSON form is an interface for people and tools; the ledger's binary
 * encoding is separate. Both go through event_validate, so that an event that
 * could not have been written is never applied.
 */
#include "model/model_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dispatch table: name and the members an event of the type carries. */
enum {
	F_NS = 1 << 0,
	F_PARENT = 1 << 1,
	F_KEY = 1 << 2,
	F_VALUE = 1 << 3,
	F_CLASS = 1 << 4,
	F_DEF = 1 << 5,
	F_NODE = 1 << 6,
	F_HOLDER = 1 << 7,
	F_RECORD = 1 << 8,
	F_NOTE = 1 << 9,
	F_RAWKEY = 1 << 10,
	F_CAPACITY = 1 << 11,
	F_TTL = 1 << 12,
};

static const struct {
	const char *name;
	unsigned fields;
} evtab[EV_MAX] = {
	[EV_NONE] = {"NONE", 0},
	[EV_TENANT] = {"TENANT", F_NS | F_PARENT},
	[EV_TENANT_GONE] = {"TENANT_GONE", F_NS | F_PARENT},
	[EV_BUDGET] = {"BUDGET", F_NS | F_KEY | F_VALUE},
	[EV_RAWKEY] = {"RAWKEY", F_NS | F_RAWKEY},
	[EV_CLASS] = {"CLASS", F_CLASS | F_DEF},
	[EV_NODE] = {"NODE", F_NODE | F_CLASS | F_CAPACITY},
	[EV_RESERVE] = {"RESERVE", F_NS | F_CLASS | F_HOLDER},
	[EV_RELEASE] = {"RELEASE", F_NS | F_CLASS | F_HOLDER},
	[EV_ALLOC] = {"ALLOC", F_NS | F_CLASS | F_HOLDER | F_NODE},
	[EV_FREE] = {"FREE", F_NS | F_CLASS | F_HOLDER | F_NODE},
	[EV_VERDICT] = {"VERDICT", F_RECORD},
	[EV_NOTE] = {"NOTE", F_NOTE},
	[EV_TICK] = {"TICK", 0},
	[EV_HOLDS] = {"HOLDS", F_TTL},
};

const char *event_type_name(enum event_type t)
{
	if ((int)t <= EV_NONE || t >= EV_MAX)
		return "NONE";
	return evtab[t].name;
}

enum event_type model__event_type_parse(const char *s)
{
	if (s == NULL)
		return EV_NONE;
	for (int t = EV_NONE + 1; t < EV_MAX; t++)
		if (strcmp(evtab[t].name, s) == 0)
			return (enum event_type)t;
	return EV_NONE;
}

bool model__observation_continues(uint64_t last_seq, int64_t last_ns,
				  const struct event *ev)
{
	return last_seq != 0 && ev->type >= EV_RESERVE &&
	       ev->type <= EV_FREE && ev->seq == last_seq + 1 &&
	       ev->time_ns == last_ns;
}

/* ---------------------------------------------------------------------- */
/* Validation */

static bool label(const char *s)
{
	return model__dns1123_label_cstr(s);
}

static bool subdomain(const char *s)
{
	return model__dns1123_subdomain_cstr(s);
}

/* Longest resource name we accept: "<prefix>/<name>", prefix a subdomain. */
#define RESOURCE_NAME_MAX (DNS1123_SUBDOMAIN_MAX + 1 + 63)

static int validate_holder(const struct event *ev, struct lg_error *err)
{
	const char *what = event_type_name(ev->type);
	bool up = ev->type == EV_RESERVE || ev->type == EV_ALLOC;

	if (ev->kind <= HK_NONE || ev->kind >= HK_MAX)
		return lg_error_set(err, LG_EINVAL, "%s: bad holder kind",
				    what);
	if (!subdomain(ev->name))
		return lg_error_set(err, LG_EINVAL, "%s: bad holder name",
				    what);
	if (ev->uid == NULL || strlen(ev->uid) > 128)
		return lg_error_set(err, LG_EINVAL, "%s: bad uid", what);
	if (ev->before < 0 || ev->after < 0)
		return lg_error_set(err, LG_EINVAL, "%s: negative units", what);
	if (ev->before > HOLDER_UNITS_MAX || ev->after > HOLDER_UNITS_MAX)
		return lg_error_set(err, LG_EINVAL,
				    "%s: units above %lld (DESIGN 2.3 Bounds)",
				    what, HOLDER_UNITS_MAX);
	if (up ? ev->after <= ev->before : ev->after >= ev->before)
		return lg_error_set(
			err, LG_EINVAL, "%s: units must %s (%lld -> %lld)",
			what, up ? "grow" : "shrink", (long long)ev->before,
			(long long)ev->after);
	if ((evtab[ev->type].fields & F_NODE) && ev->node == NULL)
		return lg_error_set(err, LG_EINVAL, "%s: no node", what);
	if (ev->node != NULL && ev->node[0] != '\0' && !subdomain(ev->node))
		return lg_error_set(err, LG_EINVAL, "%s: bad node name", what);
	return 0;
}

static int validate_tenant(const struct event *ev, struct lg_error *err)
{
	char parent[DNS1123_SUBDOMAIN_MAX + 1];
	bool has_parent;

	if (!label(ev->ns) || !ns_is_tenant(ev->ns))
		return lg_error_set(
			err, LG_EINVAL, "%s: \"%s\" is not a tenant namespace",
			event_type_name(ev->type), ev->ns ? ev->ns : "");
	has_parent = ns_parent(ev->ns, parent);
	if (has_parent != (ev->parent != NULL) ||
	    (has_parent && strcmp(parent, ev->parent) != 0))
		return lg_error_set(err, LG_EINVAL,
				    "%s: parent of %s must be %s",
				    event_type_name(ev->type), ev->ns,
				    has_parent ? parent : "null");
	return 0;
}

int event_validate(const struct event *ev, struct lg_error *err)
{
	unsigned f;

	if ((int)ev->type <= EV_NONE || ev->type >= EV_MAX)
		return lg_error_set(err, LG_EINVAL, "bad event type %d",
				    (int)ev->type);
	f = evtab[ev->type].fields;
	if ((f & F_NS) && !label(ev->ns))
		return lg_error_set(err, LG_EINVAL, "%s: bad namespace",
				    evtab[ev->type].name);
	if ((f & F_CLASS) && !label(ev->cls) &&
	    !(ev->type == EV_NODE && ev->cls != NULL &&
	      strcmp(ev->cls, NODE_EXISTS_CLASS) == 0))
		return lg_error_set(err, LG_EINVAL, "%s: bad class name",
				    evtab[ev->type].name);
	switch (ev->type) {
	case EV_TENANT:
	case EV_TENANT_GONE:
		return validate_tenant(ev, err);
	case EV_BUDGET: {
		enum key_kind k =
			ev->key ? model__budget_key_classify(ev->key, NULL,
							     NULL, NULL, NULL)
				: KEY_INVALID;
		if (k != KEY_CLASS && k != KEY_TOTAL)
			return lg_error_set(err, LG_EINVAL,
					    "BUDGET: not a budget key");
		if (ev->present && ev->value < 0)
			return lg_error_set(err, LG_EINVAL,
					    "BUDGET: negative value");
		return 0;
	}
	case EV_RAWKEY:
		if (ev->key == NULL || ev->key[0] == '\0' ||
		    strlen(ev->key) > RESOURCE_NAME_MAX)
			return lg_error_set(err, LG_EINVAL,
					    "RAWKEY: bad resource name");
		return 0;
	case EV_NODE:
		if (!subdomain(ev->node))
			return lg_error_set(err, LG_EINVAL,
					    "NODE: bad node name");
		if (ev->value < 0)
			return lg_error_set(err, LG_EINVAL,
					    "NODE: negative capacity");
		if (ev->cls[0] == '\0' && ev->value != 0)
			return lg_error_set(err, LG_EINVAL,
					    "NODE: existence with a capacity");
		return 0;
	case EV_RESERVE:
	case EV_RELEASE:
	case EV_ALLOC:
	case EV_FREE:
		return validate_holder(ev, err);
	case EV_VERDICT:
		if (ev->text == NULL)
			return lg_error_set(err, LG_EINVAL,
					    "VERDICT: no record");
		return 0;
	case EV_NOTE:
		if (ev->key == NULL || ev->text == NULL)
			return lg_error_set(err, LG_EINVAL,
					    "NOTE: no code or message");
		return 0;
	case EV_HOLDS:
		if (ev->value < 0 || ev->value > HOLDS_TTL_MS_MAX)
			return lg_error_set(err, LG_EINVAL,
					    "HOLDS: TTL %lld ms outside 0..%lld",
					    (long long)ev->value,
					    HOLDS_TTL_MS_MAX);
		return 0;
	default:
		return 0;
	}
}

/* ---------------------------------------------------------------------- */
/* Time: RFC 3339, UTC, nanoseconds. Civil-date arithmetic after Howard
 * Hinnant's days_from_civil, so that no libc time zone state is touched. */

static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	y -= m <= 2;
	int64_t era = (y >= 0 ? y : y - 399) / 400;
	unsigned yoe = (unsigned)(y - era * 400);
	unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
	unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + (int64_t)doe - 719468;
}

static void civil_from_days(int64_t z, int64_t *y, unsigned *m, unsigned *d)
{
	z += 719468;
	int64_t era = (z >= 0 ? z : z - 146096) / 146097;
	unsigned doe = (unsigned)(z - era * 146097);
	unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	unsigned mp = (5 * doy + 2) / 153;
	*d = doy - (153 * mp + 2) / 5 + 1;
	*m = mp < 10 ? mp + 3 : mp - 9;
	*y = (int64_t)yoe + era * 400 + (*m <= 2);
}

/* The nanoseconds and the closing Z after the 20 characters of the
 * seconds. */
static size_t put_ns(char *buf, unsigned ns)
{
	for (int k = 28; k >= 20; k--, ns /= 10)
		buf[k] = (char)('0' + ns % 10);
	buf[29] = 'Z';
	buf[30] = '\0';
	return 30;
}

/* The text up to the seconds' dot of the last second formatted: the
 * events of a batch mostly share their second (every Merkle leaf has a
 * time). */
static _Thread_local int64_t tf_secs = INT64_MIN;
static _Thread_local char tf_text[20];

size_t time_format_ns(int64_t t_ns, char *buf, size_t cap)
{
	int64_t secs = t_ns / 1000000000, ns = t_ns % 1000000000;
	int64_t days, y, sod;
	unsigned m, d;
	int n;

	if (ns < 0) {
		ns += 1000000000;
		secs--;
	}
	if (secs == tf_secs && cap > 30) {
		memcpy(buf, tf_text, sizeof(tf_text));
		return put_ns(buf, (unsigned)ns);
	}
	days = secs / 86400;
	sod = secs % 86400;
	if (sod < 0) {
		sod += 86400;
		days--;
	}
	civil_from_days(days, &y, &m, &d);
	if (y >= 0 && y <= 9999 && cap > 30) {
		/* The common case without snprintf (every Merkle leaf). */
		unsigned v[6] = {(unsigned)y, m, d, (unsigned)(sod / 3600),
				 (unsigned)(sod / 60 % 60), (unsigned)(sod % 60)};
		static const int w[6] = {4, 2, 2, 2, 2, 2};
		static const char sep[6] = {'-', '-', 'T', ':', ':', '.'};
		char *o = buf;

		for (int i = 0; i < 6; i++) {
			for (int k = w[i] - 1; k >= 0; k--, v[i] /= 10)
				o[k] = (char)('0' + v[i] % 10);
			o += w[i];
			*o++ = sep[i];
		}
		memcpy(tf_text, buf, sizeof(tf_text));
		tf_secs = secs;
		return put_ns(buf, (unsigned)ns);
	}
	n = snprintf(buf, cap, "%04lld-%02u-%02uT%02d:%02d:%02d.%09lldZ",
		     (long long)y, m, d, (int)(sod / 3600),
		     (int)(sod / 60 % 60), (int)(sod % 60), (long long)ns);
	return n < 0 ? 0 : (size_t)n;
}

int time_parse_ns(const char *s, int64_t *out)
{
	int y, mo, d, h, mi, sec, oh = 0, om = 0, sign = 0;
	int64_t frac = 0;
	const char *p;
	static const unsigned char mdays[] = {31, 29, 31, 30, 31, 30,
					      31, 31, 30, 31, 30, 31};

	if (s == NULL || strlen(s) < 20 || !model__digits(s, 4, &y) ||
	    s[4] != '-' || !model__digits(s + 5, 2, &mo) || s[7] != '-' ||
	    !model__digits(s + 8, 2, &d) ||
	    (s[10] != 'T' && s[10] != 't' && s[10] != ' ') ||
	    !model__digits(s + 11, 2, &h) || s[13] != ':' ||
	    !model__digits(s + 14, 2, &mi) || s[16] != ':' ||
	    !model__digits(s + 17, 2, &sec))
		return LG_EINVAL;
	if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] || h > 23 ||
	    mi > 59 || sec > 60)
		return LG_EINVAL;
	if (mo == 2 && d == 29 &&
	    !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0)))
		return LG_EINVAL;
	p = s + 19;
	if (*p == '.') {
		int n = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 9)
				frac = frac * 10 + (*p - '0');
		if (n == 0)
			return LG_EINVAL;
		for (; n < 9; n++)
			frac *= 10;
	}
	if ((*p == 'Z' || *p == 'z') && p[1] == '\0') {
		sign = 0;
	} else if ((*p == '+' || *p == '-') && strlen(p) == 6 &&
		   model__digits(p + 1, 2, &oh) && p[3] == ':' &&
		   model__digits(p + 4, 2, &om) && oh <= 23 && om <= 59) {
		sign = *p == '+' ? 1 : -1;
	} else {
		return LG_EINVAL;
	}
	/* A leap second (:60, with any fraction) is read as the last
	 * nanosecond of the second before it: it keeps its minute, sorts
	 * before the next minute, and int64 ns need no 61st second. */
	if (sec == 60)
		sec = 59, frac = 999999999;
	int64_t t = days_from_civil(y, (unsigned)mo, (unsigned)d) * 86400 +
		    h * 3600 + mi * 60 + sec - sign * (oh * 3600 + om * 60);
	__int128 r = (__int128)t * 1000000000 + frac;
	if (r > INT64_MAX || r < INT64_MIN)
		return LG_ERANGE;
	*out = (int64_t)r;
	return 0;
}

/* A date alone ("2026-01-15") as its midnight UTC, in full (32 bytes);
 * anything else as it is. The date's own checks (month, day, leap year)
 * are the full parser's. */
static const char *user_time_text(const char *s, char *full)
{
	if (s == NULL || strlen(s) != 10)
		return s;
	snprintf(full, 32, "%sT00:00:00Z", s);
	return full;
}

int time_parse_user_ns(const char *s, int64_t *out)
{
	char full[32];
	int64_t t;
	int rc;

	s = user_time_text(s, full);
	/* Four digits of year reach 9999, int64 nanoseconds only 2262: a
	 * time past the last nanosecond is LG_ERANGE from the parser, and
	 * one before 1970 is refused here, so that no caller does
	 * arithmetic on a time the ledger cannot date. */
	rc = time_parse_ns(s, &t);
	if (rc == 0 && t < 0)
		rc = LG_ERANGE;
	if (rc == 0)
		*out = t;
	return rc;
}

const char *time_user_why(const char *s)
{
	char full[32];
	int64_t t;
	int rc;

	s = user_time_text(s, full);
	rc = time_parse_ns(s, &t);
	/* Out of int64 either way: the year (four digits, or the parser
	 * would have said LG_EINVAL) tells which. */
	if (rc == LG_ERANGE && strncmp(s, "1970", 4) < 0)
		rc = 0, t = -1;
	if (rc == LG_ERANGE)
		return "is beyond what the ledger can date (its times end at "
		       TIME_LAST_TEXT ", the last nanosecond of int64)";
	if (rc == 0 && t < 0)
		return "is before 1970-01-01T00:00:00Z, where the ledger's "
		       "times start";
	return "is not an RFC 3339 time or a date (YYYY-MM-DD, midnight "
	       "UTC)";
}

/* ---------------------------------------------------------------------- */
/* JSON form */

static json_t *jstr_or_null(const char *s)
{
	return s ? json_string(s) : json_null();
}

/* Parses canonical JSON text stored in an event; on failure a string. */
static json_t *text_json(const char *text)
{
	json_t *v;

	if (text == NULL)
		return json_null();
	v = json_loads(text, JSON_DECODE_ANY, NULL);
	return v ? v : json_string(text);
}

json_t *event_to_json(const struct event *ev)
{
	unsigned f = ((int)ev->type > EV_NONE && ev->type < EV_MAX)
			     ? evtab[ev->type].fields
			     : 0;
	char tbuf[48];
	json_t *o = json_object();

	json_object_set_new(o, "seq", json_integer((json_int_t)ev->seq));
	time_format_ns(ev->time_ns, tbuf, sizeof(tbuf));
	json_object_set_new(o, "time", json_string(tbuf));
	json_object_set_new(o, "type", json_string(event_type_name(ev->type)));
	if (f & F_NS)
		json_object_set_new(o, "namespace", jstr_or_null(ev->ns));
	if (f & F_PARENT)
		json_object_set_new(o, "parent", jstr_or_null(ev->parent));
	if (f & F_KEY)
		json_object_set_new(o, "key", jstr_or_null(ev->key));
	if (f & F_VALUE)
		json_object_set_new(o, "value",
				    ev->present ? json_integer(ev->value)
						: json_null());
	if (f & F_RAWKEY) {
		json_object_set_new(o, "resource", jstr_or_null(ev->key));
		json_object_set_new(o, "present", json_boolean(ev->present));
	}
	if (f & F_CLASS)
		json_object_set_new(o, "class", jstr_or_null(ev->cls));
	if (f & F_DEF)
		json_object_set_new(o, "definition", text_json(ev->text));
	if (f & F_NODE)
		json_object_set_new(o, "node", jstr_or_null(ev->node));
	if (f & F_CAPACITY) {
		json_object_set_new(o, "capacity", json_integer(ev->value));
		json_object_set_new(o, "serves", json_boolean(ev->present));
	}
	if (f & F_HOLDER) {
		json_object_set_new(
			o, "kind",
			json_string(model__holder_kind_name(ev->kind)));
		json_object_set_new(o, "name", jstr_or_null(ev->name));
		json_object_set_new(o, "uid", jstr_or_null(ev->uid));
		json_object_set_new(o, "before", json_integer(ev->before));
		json_object_set_new(o, "after", json_integer(ev->after));
	}
	if (f & F_RECORD)
		json_object_set_new(o, "record", text_json(ev->text));
	if (f & F_TTL)
		json_object_set_new(o, "ttlMs", json_integer(ev->value));
	if (f & F_NOTE) {
		json_object_set_new(o, "code", jstr_or_null(ev->key));
		json_object_set_new(o, "namespace", jstr_or_null(ev->ns));
		json_object_set_new(
			o, "kind",
			ev->kind > HK_NONE && ev->kind < HK_MAX
				? json_string(model__holder_kind_name(ev->kind))
				: json_null());
		json_object_set_new(o, "name", jstr_or_null(ev->name));
		json_object_set_new(o, "message", jstr_or_null(ev->text));
	}
	return o;
}

/* event_jcs without building the JSON tree: the members of the type in
 * the order of their names (ASCII, so byte order is UTF-16 order), written
 * straight into b. Only the embedded CLASS definition and VERDICT record
 * go through jansson (parsed, as event_to_json embeds them). Two hashes an
 * event are cheap next to a jansson tree, and every append computes its
 * Merkle leaf here. */
enum mval { MV_STR, MV_RAW, MV_INT, MV_BOOL, MV_NULL, MV_JSON };

struct mem {
	const char *key; /* the text ,"name": */
	size_t klen;
	enum mval t;
	const char *s;
	int64_t i;
};

static void mem_put(struct mem *m, size_t *n, const char *key, size_t klen,
		    enum mval t, const char *s, int64_t i)
{
	if ((t == MV_STR || t == MV_RAW) && s == NULL)
		t = MV_NULL;
	m[(*n)++] = (struct mem){key, klen, t, s, i};
}

/* key is a string literal: its separator, quotes and colon are written in
 * one piece. */
#define mem_add(m, n, key, t, s, i)                                            \
	mem_put(m, n, ",\"" key "\":", sizeof(key) + 3, t, s, i)

static size_t event_members(const struct event *ev, struct mem *m,
			    char *tbuf, size_t tcap)
{
	unsigned f = ((int)ev->type > EV_NONE && ev->type < EV_MAX)
			     ? evtab[ev->type].fields
			     : 0;
	size_t n = 0;

	bool holder = f & F_HOLDER, note = f & F_NOTE;
	const char *kind = ev->kind > HK_NONE && ev->kind < HK_MAX
				   ? model__holder_kind_name(ev->kind)
				   : NULL;

	/* In the order of the names (the JCS order), so nothing is sorted. */
	time_format_ns(ev->time_ns, tbuf, tcap);
	if (holder) {
		mem_add(m, &n, "after", MV_INT, NULL, ev->after);
		mem_add(m, &n, "before", MV_INT, NULL, ev->before);
	}
	if (f & F_CAPACITY)
		mem_add(m, &n, "capacity", MV_INT, NULL, ev->value);
	if (f & F_CLASS)
		mem_add(m, &n, "class", MV_STR, ev->cls, 0);
	if (note)
		mem_add(m, &n, "code", MV_STR, ev->key, 0);
	if (f & F_DEF)
		mem_add(m, &n, "definition", MV_JSON, ev->text, 0);
	if (f & F_KEY)
		mem_add(m, &n, "key", MV_STR, ev->key, 0);
	if (holder)
		mem_add(m, &n, "kind", MV_STR,
			model__holder_kind_name(ev->kind), 0);
	if (note) {
		mem_add(m, &n, "kind", MV_STR, kind, 0);
		mem_add(m, &n, "message", MV_STR, ev->text, 0);
	}
	if (holder || note)
		mem_add(m, &n, "name", MV_STR, ev->name, 0);
	if (f & (F_NS | F_NOTE))
		mem_add(m, &n, "namespace", MV_STR, ev->ns, 0);
	if (f & F_NODE)
		mem_add(m, &n, "node", MV_STR, ev->node, 0);
	if (f & F_PARENT)
		mem_add(m, &n, "parent", MV_STR, ev->parent, 0);
	if (f & F_RAWKEY)
		mem_add(m, &n, "present", MV_BOOL, NULL, ev->present);
	if (f & F_RECORD)
		mem_add(m, &n, "record", MV_JSON, ev->text, 0);
	if (f & F_RAWKEY)
		mem_add(m, &n, "resource", MV_STR, ev->key, 0);
	mem_add(m, &n, "seq", MV_INT, NULL, (int64_t)ev->seq);
	if (f & F_CAPACITY)
		mem_add(m, &n, "serves", MV_BOOL, NULL, ev->present);
	/* Our own texts, with nothing to escape (digits and -T:.Z, and the
	 * upper-case type names). */
	mem_add(m, &n, "time", MV_RAW, tbuf, 0);
	if (f & F_TTL)
		mem_add(m, &n, "ttlMs", MV_INT, NULL, ev->value);
	mem_add(m, &n, "type", MV_RAW, event_type_name(ev->type), 0);
	if (holder)
		mem_add(m, &n, "uid", MV_STR, ev->uid, 0);
	if (f & F_VALUE)
		mem_add(m, &n, "value", ev->present ? MV_INT : MV_NULL, NULL,
			ev->value);
	return n;
}

static int put_member(struct lg_buf *b, const struct mem *m)
{
	json_t *v;
	int rc = 0;

	switch (m->t) {
	case MV_STR:
		return model__jcs_put_string(b, m->s, strlen(m->s));
	case MV_RAW:
		lg_buf_add(b, "\"", 1);
		lg_buf_add(b, m->s, strlen(m->s));
		lg_buf_add(b, "\"", 1);
		return 0;
	case MV_INT:
		model__jcs_put_integer(b, m->i, JCS_INT_STRINGS);
		return 0;
	case MV_BOOL:
		lg_buf_add(b, m->i ? "true" : "false", m->i ? 4 : 5);
		return 0;
	case MV_NULL:
		lg_buf_add(b, "null", 4);
		return 0;
	default:
		/* Stored canonical already, as a record or a definition is:
		 * copied, not read and written again (the same bytes). */
		if (m->s != NULL) {
			size_t n = strlen(m->s);

			if (model__jcs_own_form(m->s, n)) {
				lg_buf_add(b, m->s, n);
				return 0;
			}
		}
		v = text_json(m->s);
		rc = model__jcs_write(b, v, JCS_INT_STRINGS, SIZE_MAX);
		json_decref(v);
		return rc;
	}
}

int event_jcs_write(struct lg_buf *b, const struct event *ev)
{
	struct mem m[16];
	char tbuf[48];
	size_t n = event_members(ev, m, tbuf, sizeof(tbuf));
	int rc = 0;

	lg_buf_add(b, "{", 1);
	for (size_t i = 0; i < n && rc == 0; i++) {
		/* The first member goes without its comma. */
		lg_buf_add(b, m[i].key + (i == 0), m[i].klen - (i == 0));
		rc = put_member(b, &m[i]);
	}
	lg_buf_add(b, "}", 1);
	return rc == 0 && !lg_buf_failed(b) ? 0 : -1;
}

char *event_jcs(const struct event *ev)
{
	struct lg_buf b;
	char *text = NULL;

	lg_buf_init(&b, JCS_TEXT_MAX_BYTES);
	if (event_jcs_write(&b, ev) == 0)
		text = lg_buf_detach(&b, NULL);
	lg_buf_release(&b);
	return text;
}

/* Reads member k of o as a string or null; LG_EINVAL on another type. */
static int opt_str(const json_t *o, const char *k, const char **out,
		   struct lg_error *err)
{
	json_t *v = json_object_get(o, k);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_string(v))
		return lg_error_set(err, LG_EINVAL,
				    "event: \"%s\" must be a string", k);
	*out = json_string_value(v);
	return 0;
}

/* An integer member: a JSON integer, or (as `log` writes one beyond
 * +-(2^53-1), DESIGN 4.4) a string of its decimal digits. */
static int req_int(const json_t *o, const char *k, int64_t *out,
		   struct lg_error *err)
{
	json_t *v = json_object_get(o, k);

	if (json_is_string(v)) {
		const char *s = json_string_value(v), *p = s + (*s == '-');
		char *end;
		long long n;

		errno = 0;
		n = strtoll(s, &end, 10);
		if (*p >= '0' && *p <= '9' && *end == '\0' && errno == 0 &&
		    (p[0] != '0' || p[1] == '\0') &&
		    (n > 9007199254740991LL || n < -9007199254740991LL)) {
			*out = n;
			return 0;
		}
	}
	if (!json_is_integer(v))
		return lg_error_set(err, LG_EINVAL,
				    "event: \"%s\" must be an integer", k);
	*out = json_integer_value(v);
	return 0;
}

static int req_bool(const json_t *o, const char *k, bool *out,
		    struct lg_error *err)
{
	json_t *v = json_object_get(o, k);

	if (!json_is_boolean(v))
		return lg_error_set(err, LG_EINVAL,
				    "event: \"%s\" must be a boolean", k);
	*out = json_is_true(v);
	return 0;
}

/* Renders member k (an object or null) canonically into *scratch. */
static int canonical_member(const json_t *o, const char *k, const char **out,
			    char **scratch, struct lg_error *err)
{
	json_t *v = json_object_get(o, k);

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	/* A record that a reader of integers cannot take as an object (a
	 * number beyond int64, which JCS writes in full) is shown as its text
	 * (text_json): that text is the record. */
	if (json_is_string(v) && strcmp(k, "record") == 0) {
		*out = json_string_value(v);
		return 0;
	}
	if (!json_is_object(v))
		return lg_error_set(err, LG_EINVAL,
				    "event: \"%s\" must be an object", k);
	free(*scratch);
	*scratch = json_canonical(v);
	*out = *scratch;
	return 0;
}

static int holder_from_json(struct event *ev, const json_t *v, unsigned f,
			    struct lg_error *err)
{
	const char *kind;
	int rc;

	if ((rc = opt_str(v, "kind", &kind, err)) != 0)
		return rc;
	ev->kind = model__holder_kind_parse(kind);
	if ((f & F_HOLDER) && ev->kind == HK_NONE)
		return lg_error_set(err, LG_EINVAL, "event: bad \"kind\"");
	if ((rc = opt_str(v, "name", &ev->name, err)) != 0)
		return rc;
	if (!(f & F_HOLDER))
		return 0;
	if ((rc = opt_str(v, "uid", &ev->uid, err)) != 0 ||
	    (rc = req_int(v, "before", &ev->before, err)) != 0 ||
	    (rc = req_int(v, "after", &ev->after, err)) != 0)
		return rc;
	if (ev->uid == NULL)
		ev->uid = "";
	return 0;
}

static int fields_from_json(struct event *ev, const json_t *v, unsigned f,
			    char **scratch, struct lg_error *err)
{
	int rc = 0;

	if ((f & (F_NS | F_NOTE)) &&
	    (rc = opt_str(v, "namespace", &ev->ns, err)))
		return rc;
	if ((f & F_PARENT) && (rc = opt_str(v, "parent", &ev->parent, err)))
		return rc;
	if ((f & F_KEY) && (rc = opt_str(v, "key", &ev->key, err)))
		return rc;
	if (f & F_VALUE) {
		json_t *val = json_object_get(v, "value");

		ev->present = val != NULL && !json_is_null(val);
		if (ev->present && (rc = req_int(v, "value", &ev->value, err)))
			return rc;
	}
	if ((f & F_RAWKEY) &&
	    ((rc = opt_str(v, "resource", &ev->key, err)) ||
	     (rc = req_bool(v, "present", &ev->present, err))))
		return rc;
	if ((f & F_CLASS) && (rc = opt_str(v, "class", &ev->cls, err)))
		return rc;
	if ((f & F_DEF) &&
	    (rc = canonical_member(v, "definition", &ev->text, scratch, err)))
		return rc;
	if ((f & F_NODE) && (rc = opt_str(v, "node", &ev->node, err)))
		return rc;
	if ((f & F_CAPACITY) &&
	    ((rc = req_int(v, "capacity", &ev->value, err)) ||
	     (rc = req_bool(v, "serves", &ev->present, err))))
		return rc;
	if ((f & (F_HOLDER | F_NOTE)) && (rc = holder_from_json(ev, v, f, err)))
		return rc;
	if ((f & F_RECORD) &&
	    (rc = canonical_member(v, "record", &ev->text, scratch, err)))
		return rc;
	if ((f & F_TTL) && (rc = req_int(v, "ttlMs", &ev->value, err)))
		return rc;
	if ((f & F_NOTE) && ((rc = opt_str(v, "code", &ev->key, err)) ||
			     (rc = opt_str(v, "message", &ev->text, err))))
		return rc;
	if ((f & F_NODE) && ev->node == NULL && (f & F_HOLDER))
		ev->node = "";
	return 0;
}

int event_from_json(struct event *ev, const json_t *v, char **scratch,
		    struct lg_error *err)
{
	json_t *seq = json_object_get(v, "seq");
	const char *time;
	int rc;

	memset(ev, 0, sizeof(*ev));
	if (!json_is_object(v))
		return lg_error_set(err, LG_EINVAL, "event: not an object");
	ev->type = model__event_type_parse(jstr(v, "type"));
	if (ev->type == EV_NONE)
		return lg_error_set(err, LG_EINVAL, "event: unknown \"type\"");
	if (seq != NULL && !json_is_null(seq)) {
		if (!json_is_integer(seq) || json_integer_value(seq) < 0)
			return lg_error_set(err, LG_EINVAL,
					    "event: bad \"seq\"");
		ev->seq = (uint64_t)json_integer_value(seq);
	}
	if ((rc = opt_str(v, "time", &time, err)) != 0)
		return rc;
	if (time != NULL && time_parse_ns(time, &ev->time_ns) != 0)
		return lg_error_set(err, LG_EINVAL,
				    "event: \"time\" is not RFC 3339: %s",
				    time);
	if ((rc = fields_from_json(ev, v, evtab[ev->type].fields, scratch,
				   err)) != 0)
		return rc;
	return event_validate(ev, err);
}

int model__state_from_events_json(const json_t *events, state_t **out,
				  struct lg_error *err)
{
	state_t *st;
	size_t i;
	json_t *v;

	*out = NULL;
	if (!json_is_array(events))
		return lg_error_set(err, LG_EINVAL,
				    "state: \"events\" must be a list");
	st = state_new();
	json_array_foreach (events, i, v) {
		struct event ev;
		char *scratch = NULL;
		int rc = event_from_json(&ev, v, &scratch, err);

		if (rc == 0) {
			/* Inline events may omit seq and time. */
			ev.seq = 0;
			if (json_object_get(v, "time") == NULL)
				ev.time_ns = state_time_ns(st);
			rc = state_apply(st, &ev, err);
		}
		free(scratch);
		if (rc != 0) {
			if (err != NULL) {
				char msg[LG_ERRMSG_MAX];

				snprintf(msg, sizeof(msg), "%s", err->msg);
				lg_error_set(err, rc, "state event %zu: %s", i,
					     msg);
			}
			state_free(st);
			return rc;
		}
	}
	*out = st;
	return 0;
}
