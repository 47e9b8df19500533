/* Events: names, validation, JSON form, RFC 3339 time, canonical JSON. */
#include "tests/model_tests.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

/* One event of every type in JSON form; each must round-trip exactly. */
static const char *const round_trip[] = {
	"{\"namespace\":\"tenant-root\",\"parent\":null,\"seq\":1,"
	"\"time\":\"2026-01-02T03:04:05.000000006Z\",\"type\":\"TENANT\"}",
	"{\"namespace\":\"tenant-a-b\",\"parent\":\"tenant-a\",\"seq\":2,"
	"\"time\":\"2026-01-02T03:04:05.000000006Z\",\"type\":\"TENANT_GONE\"}",
	"{\"key\":\"h100.gpuclass.cozystack.io/devices\",\"namespace\":"
	"\"tenant-a\",\"seq\":3,\"time\":\"1970-01-01T00:00:00.000000000Z\","
	"\"type\":\"BUDGET\",\"value\":8}",
	"{\"key\":\"gpuclass.cozystack.io/devices\",\"namespace\":\"tenant-a\","
	"\"seq\":4,\"time\":\"1970-01-01T00:00:00.000000000Z\",\"type\":"
	"\"BUDGET\",\"value\":null}",
	"{\"namespace\":\"tenant-a\",\"present\":true,\"resource\":"
	"\"nvidia.com/GH100\",\"seq\":5,\"time\":"
	"\"1970-01-01T00:00:00.000000000Z\",\"type\":\"RAWKEY\"}",
	"{\"class\":\"h100\",\"definition\":{\"deviceClassName\":\"h100\","
	"\"name\":\"h100\",\"resourceNames\":[\"nvidia.com/GH100\"],"
	"\"tolerations\":[]},\"seq\":6,\"time\":"
	"\"1970-01-01T00:00:00.000000000Z\",\"type\":\"CLASS\"}",
	"{\"class\":\"h100\",\"definition\":null,\"seq\":7,\"time\":"
	"\"1970-01-01T00:00:00.000000000Z\",\"type\":\"CLASS\"}",
	"{\"capacity\":8,\"class\":\"h100\",\"node\":\"node-1\",\"seq\":8,"
	"\"serves\":true,\"time\":\"1970-01-01T00:00:00.000000000Z\","
	"\"type\":\"NODE\"}",
	"{\"after\":2,\"before\":0,\"class\":\"h100\",\"kind\":\"VMInstance\","
	"\"name\":\"vm1\",\"namespace\":\"tenant-a\",\"seq\":9,\"time\":"
	"\"1970-01-01T00:00:00.000000000Z\",\"type\":\"RESERVE\",\"uid\":"
	"\"u1\"}",
	"{\"after\":0,\"before\":2,\"class\":\"h100\",\"kind\":"
	"\"KubernetesNodes\",\"name\":\"pool\",\"namespace\":\"tenant-a\","
	"\"seq\":10,\"time\":\"1970-01-01T00:00:00.000000000Z\",\"type\":"
	"\"RELEASE\",\"uid\":\"u2\"}",
	"{\"after\":1,\"before\":0,\"class\":\"h100\",\"kind\":"
	"\"ResourceClaim\",\"name\":\"c\",\"namespace\":\"tenant-a\",\"node\":"
	"\"node-1\",\"seq\":11,\"time\":\"1970-01-01T00:00:00.000000000Z\","
	"\"type\":\"ALLOC\",\"uid\":\"u3\"}",
	"{\"after\":0,\"before\":1,\"class\":\"h100\",\"kind\":\"Pod\","
	"\"name\":"
	"\"p\",\"namespace\":\"default\",\"node\":\"\",\"seq\":12,\"time\":"
	"\"1970-01-01T00:00:00.000000000Z\",\"type\":\"FREE\",\"uid\":\"u4\"}",
	"{\"record\":{\"allowed\":true,\"reason\":\"NoGrowth\"},\"seq\":13,"
	"\"time\":\"1970-01-01T00:00:00.000000000Z\",\"type\":\"VERDICT\"}",
	"{\"code\":\"InvalidQuantity\",\"kind\":\"Pod\",\"message\":\"bad\","
	"\"name\":\"p\",\"namespace\":\"default\",\"seq\":14,\"time\":"
	"\"1970-01-01T00:00:00.000000000Z\",\"type\":\"NOTE\"}",
	"{\"code\":\"Relist\",\"kind\":null,\"message\":\"410\",\"name\":null,"
	"\"namespace\":null,\"seq\":15,\"time\":"
	"\"1970-01-01T00:00:00.000000000Z\",\"type\":\"NOTE\"}",
	"{\"seq\":16,\"time\":\"2262-04-11T23:47:16.854775807Z\",\"type\":"
	"\"TICK\"}",
};

START_TEST(event_json_round_trip)
{
	const char *text = round_trip[_i];
	json_t *in = tj(text), *out;
	struct lg_error err = {0};
	struct event ev;
	char *scratch = NULL, *back;

	ck_assert_msg(event_from_json(&ev, in, &scratch, &err) == 0, "%s: %s",
		      text, err.msg);
	out = event_to_json(&ev);
	back = json_canonical(out);
	ck_assert_str_eq(back, text);
	free(back);
	free(scratch);
	json_decref(out);
	json_decref(in);
}
END_TEST

/* Events that must be refused, with a word the message must contain. */
static const struct {
	const char *json, *why;
} bad_events[] = {
	{"[]", "not an object"},
	{"{\"type\":\"NOPE\"}", "type"},
	{"{\"type\":\"TENANT\",\"namespace\":\"default\"}", "not a tenant"},
	{"{\"type\":\"TENANT\",\"namespace\":\"tenant-a\"}", "parent"},
	{"{\"type\":\"TENANT\",\"namespace\":\"tenant-a\",\"parent\":\"tenant-"
	 "b\"}",
	 "parent"},
	{"{\"type\":\"TENANT\",\"namespace\":\"tenant-root\",\"parent\":\"x\"}",
	 "parent"},
	{"{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\",\"key\":\"cpu\","
	 "\"value\":1}",
	 "budget key"},
	{"{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\",\"key\":"
	 "\"gpuclass.cozystack.io/devices\",\"value\":-1}",
	 "negative"},
	{"{\"type\":\"BUDGET\",\"namespace\":\"tenant-a\",\"key\":"
	 "\"gpuclass.cozystack.io/devices\",\"value\":\"8\"}",
	 "integer"},
	{"{\"type\":\"RAWKEY\",\"namespace\":\"tenant-a\",\"resource\":\"\","
	 "\"present\":true}",
	 "resource"},
	{"{\"type\":\"RAWKEY\",\"namespace\":\"tenant-a\",\"resource\":\"x\"}",
	 "present"},
	{"{\"type\":\"CLASS\",\"class\":\"H100\",\"definition\":null}",
	 "class"},
	{"{\"type\":\"CLASS\",\"class\":\"h100\",\"definition\":[]}", "object"},
	{"{\"type\":\"NODE\",\"node\":\"Node_1\",\"class\":\"h100\","
	 "\"capacity\":1,\"serves\":true}",
	 "node"},
	{"{\"type\":\"NODE\",\"node\":\"n\",\"class\":\"h100\",\"capacity\":-1,"
	 "\"serves\":true}",
	 "negative"},
	{"{\"type\":\"RESERVE\",\"namespace\":\"a\",\"class\":\"h100\","
	 "\"kind\":"
	 "\"VMInstance\",\"name\":\"v\",\"uid\":\"u\",\"before\":2,\"after\":"
	 "1}",
	 "grow"},
	{"{\"type\":\"RELEASE\",\"namespace\":\"a\",\"class\":\"h100\","
	 "\"kind\":"
	 "\"VMInstance\",\"name\":\"v\",\"uid\":\"u\",\"before\":1,\"after\":"
	 "1}",
	 "shrink"},
	{"{\"type\":\"RELEASE\",\"namespace\":\"a\",\"class\":\"h100\","
	 "\"kind\":"
	 "\"VMInstance\",\"name\":\"v\",\"uid\":\"u\",\"before\":1,\"after\":-"
	 "1}",
	 "negative"},
	{"{\"type\":\"RESERVE\",\"namespace\":\"a\",\"class\":\"h100\","
	 "\"kind\":"
	 "\"Deployment\",\"name\":\"v\",\"uid\":\"u\",\"before\":0,\"after\":"
	 "1}",
	 "kind"},
	{"{\"type\":\"RESERVE\",\"namespace\":\"a\",\"class\":\"h100\","
	 "\"kind\":"
	 "\"Pod\",\"name\":\"\",\"uid\":\"u\",\"before\":0,\"after\":1}",
	 "name"},
	{"{\"type\":\"ALLOC\",\"namespace\":\"a\",\"class\":\"h100\",\"kind\":"
	 "\"Pod\",\"name\":\"p\",\"uid\":\"u\",\"before\":0,\"after\":1,"
	 "\"node\":\"Bad Node\"}",
	 "node"},
	{"{\"type\":\"RESERVE\",\"namespace\":\"a\",\"class\":\"h100\","
	 "\"kind\":"
	 "\"Pod\",\"name\":\"p\",\"uid\":\"u\",\"before\":0}",
	 "after"},
	{"{\"type\":\"TICK\",\"time\":\"yesterday\"}", "RFC 3339"},
	{"{\"type\":\"TICK\",\"seq\":-1}", "seq"},
	{"{\"type\":\"NOTE\",\"message\":\"m\"}", "code"},
	{"{\"type\":\"VERDICT\"}", "record"},
};

START_TEST(event_json_refused)
{
	json_t *in = tj(bad_events[_i].json);
	struct lg_error err = {0};
	struct event ev;
	char *scratch = NULL;

	ck_assert_int_eq(event_from_json(&ev, in, &scratch, &err), LG_EINVAL);
	ck_assert_msg(strstr(err.msg, bad_events[_i].why) != NULL,
		      "%s: message \"%s\" lacks \"%s\"", bad_events[_i].json,
		      err.msg, bad_events[_i].why);
	free(scratch);
	json_decref(in);
}
END_TEST

START_TEST(event_type_names)
{
	for (int t = EV_NONE + 1; t < EV_MAX; t++)
		ck_assert_int_eq(model__event_type_parse(event_type_name(t)),
				 t);
	ck_assert_int_eq(model__event_type_parse("reserve"), EV_NONE);
	ck_assert_int_eq(model__event_type_parse(NULL), EV_NONE);
	ck_assert_str_eq(event_type_name(EV_MAX), "NONE");
}
END_TEST

static const struct {
	const char *in;
	int64_t ns;
	const char *out; /* NULL: same as in */
} times[] = {
	{"1970-01-01T00:00:00Z", 0, "1970-01-01T00:00:00.000000000Z"},
	{"2026-11-30T10:53:56.123Z", 1796036036123000000,
	 "2026-11-30T10:53:56.123000000Z"},
	{"2026-11-30T12:53:56.123+02:00", 1796036036123000000,
	 "2026-11-30T10:53:56.123000000Z"},
	{"2024-02-29T00:00:00.000000001z", 1709164800000000001,
	 "2024-02-29T00:00:00.000000001Z"},
	{"1969-12-31T23:59:59.999999999Z", -1, NULL},
	{"2000-03-01T00:00:00-00:30", 951870600000000000,
	 "2000-03-01T00:30:00.000000000Z"},
	{"2026-01-01T00:00:00.1234567891Z", 1767225600123456789,
	 "2026-01-01T00:00:00.123456789Z"},
};

static const char *const bad_times[] = {
	"",
	"2026-11-30",
	"2026-11-30T10:53:56",
	"2026-13-01T00:00:00Z",
	"2026-02-29T00:00:00Z",
	"2026-11-30T24:00:00Z",
	"2026-11-30T10:60:00Z",
	"2026-11-30T10:00:00.Z",
	"2026-11-30T10:00:00+0100",
	"2026-11-30T10:00:00Zjunk",
	"2026-11-31T00:00:00Z",
};

START_TEST(event_time)
{
	char buf[48];
	int64_t t = 0;

	for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		ck_assert_msg(time_parse_ns(times[i].in, &t) == 0, "%s",
			      times[i].in);
		ck_assert_msg(t == times[i].ns, "%s: %lld", times[i].in,
			      (long long)t);
		time_format_ns(t, buf, sizeof(buf));
		ck_assert_str_eq(buf,
				 times[i].out ? times[i].out : times[i].in);
	}
	for (size_t i = 0; i < sizeof(bad_times) / sizeof(bad_times[0]); i++)
		ck_assert_msg(time_parse_ns(bad_times[i], &t) == LG_EINVAL,
			      "accepted %s", bad_times[i]);
	ck_assert_int_eq(time_parse_ns(NULL, &t), LG_EINVAL);
	ck_assert_int_eq(time_parse_ns("9999-12-31T23:59:59Z", &t), LG_ERANGE);
	ck_assert_int_eq(time_parse_ns("2262-04-11T23:47:16.854775808Z", &t),
			 LG_ERANGE);
}
END_TEST

/* time_format_ns keeps the text of the last second: runs of times in the
 * same second, the next one, far ones and before 1970, against gmtime_r. */
START_TEST(event_time_sequence)
{
	const char *e = getenv("GPULEDGER_SEED");
	uint64_t seed = e ? strtoull(e, NULL, 0) : (uint64_t)time(NULL) | 1;
	uint64_t s = seed;
	int64_t t = 1767225600000000000LL;
	char got[48], want[64];

	fprintf(stderr, "event_time_sequence: seed %llu\n",
		(unsigned long long)seed);
	for (int r = 0; r < 200000; r++) {
		struct tm tm;
		time_t secs;
		int64_t ns;

		s ^= s << 13;
		s ^= s >> 7;
		s ^= s << 17;
		switch (s % 8) {
		case 0: /* anywhere from 1678 to 2262 */
			t = (int64_t)(s >> 1) - INT64_MAX / 2;
			break;
		case 1: /* the next second */
			t += 1000000000;
			break;
		case 2: /* another second, same nanoseconds */
			t -= 1000000000 * (int64_t)((s >> 8) % 5 + 1);
			break;
		default: /* within the same second, mostly */
			t += (int64_t)((s >> 8) % 300000000);
		}
		secs = (time_t)(t / 1000000000);
		ns = t % 1000000000;
		if (ns < 0) {
			ns += 1000000000;
			secs--;
		}
		ck_assert_ptr_nonnull(gmtime_r(&secs, &tm));
		snprintf(want, sizeof(want),
			 "%04d-%02d-%02dT%02d:%02d:%02d.%09lldZ",
			 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
			 tm.tm_hour, tm.tm_min, tm.tm_sec, (long long)ns);
		ck_assert_uint_eq(time_format_ns(t, got, sizeof(got)),
				  strlen(want));
		ck_assert_msg(strcmp(got, want) == 0,
			      "seed %llu: %lld gives %s, want %s",
			      (unsigned long long)seed, (long long)t, got,
			      want);
	}
}
END_TEST

/* What an operator types: RFC 3339 as before, or a date alone (midnight
 * UTC); a date must still be a real date, and streams stay strict. */
START_TEST(event_time_user)
{
	static const char *const bad[] = {
		"2026-02-30", "2026-13-01",  "2026-1-15", "2026-01-1x",
		"26-01-15",   "2026/01/15",  "",	  "2026-01-15T",
		"2025-02-29", "2026-01-15 ",
	};
	int64_t t = 0, want = 0;

	ck_assert_int_eq(time_parse_ns("2026-01-15T00:00:00Z", &want), 0);
	ck_assert_int_eq(time_parse_user_ns("2026-01-15", &t), 0);
	ck_assert_int_eq(t, want);
	ck_assert_int_eq(time_parse_user_ns("2024-02-29", &t), 0);
	ck_assert_int_eq(time_parse_user_ns("2026-01-15T10:00:00+01:00", &t),
			 0);
	ck_assert_int_eq(t, want + 9 * 3600LL * 1000000000LL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(time_parse_user_ns(bad[i], &t) == LG_EINVAL,
			      "accepted \"%s\"", bad[i]);
	ck_assert_int_eq(time_parse_user_ns(NULL, &t), LG_EINVAL);
	ck_assert_int_eq(time_parse_ns("2026-01-15", &t), LG_EINVAL);
}
END_TEST

/* The edges of what an operator may ask for (DESIGN 7): 1970 to the last
 * int64 nanosecond; the rest of 1970..9999 is a time the ledger cannot
 * date (LG_ERANGE, said so), anything else not a time (LG_EINVAL). */
static const struct {
	const char *in;
	int rc;
	int64_t ns;
	const char *why; /* in time_user_why's phrase */
} user_edges[] = {
	{"1969-12-31", LG_ERANGE, 0, "before 1970"},
	{"1969-12-31T23:59:59.999999999Z", LG_ERANGE, 0, "before 1970"},
	{"1970-01-01T00:30:00+01:00", LG_ERANGE, 0, "before 1970"},
	{"0000-01-01", LG_ERANGE, 0, "before 1970"},
	{"1970-01-01", 0, 0, NULL},
	{"1970-01-01T00:00:00-00:01", 0, 60000000000LL, NULL},
	{"2262-04-11", 0, 9223286400000000000LL, NULL},
	{"2262-04-11T23:47:16.854775807Z", 0, INT64_MAX, NULL},
	{"2262-04-11T23:47:16.854775808Z", LG_ERANGE, 0, "beyond"},
	{"2262-04-12", LG_ERANGE, 0, "beyond"},
	{"2262-05-01", LG_ERANGE, 0, "beyond"},
	{"5000-01-01", LG_ERANGE, 0, "beyond"},
	{"5000-01-01T00:00:00Z", LG_ERANGE, 0, "beyond"},
	{"9999-12-31T23:59:59-23:59", LG_ERANGE, 0, "beyond"},
	{"10000-01-01", LG_EINVAL, 0, "not an RFC 3339"},
	{"10000-01-01T00:00:00Z", LG_EINVAL, 0, "not an RFC 3339"},
	{"-1", LG_EINVAL, 0, "not an RFC 3339"},
	{"-001-01-01", LG_EINVAL, 0, "not an RFC 3339"},
	{"99999999999999999999", LG_EINVAL, 0, "not an RFC 3339"},
	{"9223372036854775808", LG_EINVAL, 0, "not an RFC 3339"},
};

START_TEST(event_time_user_edges)
{
	for (size_t i = 0; i < sizeof(user_edges) / sizeof(user_edges[0]);
	     i++) {
		int64_t t = -7;
		int rc = time_parse_user_ns(user_edges[i].in, &t);

		ck_assert_msg(rc == user_edges[i].rc, "%s: rc %d",
			      user_edges[i].in, rc);
		if (rc == 0)
			ck_assert_msg(t == user_edges[i].ns, "%s: %lld",
				      user_edges[i].in, (long long)t);
		else
			ck_assert_msg(t == -7, "%s: written", user_edges[i].in);
		if (user_edges[i].why != NULL)
			ck_assert_msg(strstr(time_user_why(user_edges[i].in),
					     user_edges[i].why) != NULL,
				      "%s: %s", user_edges[i].in,
				      time_user_why(user_edges[i].in));
	}
}
END_TEST

START_TEST(event_canonical_json)
{
	json_t *v =
		tj("{\"b\": [1, {\"z\": null, \"a\": true}], \"a\": \"x/y\"}");
	char *s = json_canonical(v);

	ck_assert_str_eq(s,
			 "{\"a\":\"x/y\",\"b\":[1,{\"a\":true,\"z\":null}]}");
	free(s);
	json_decref(v);
}
END_TEST

START_TEST(event_errors_table)
{
	for (int c = LG_ERR_MIN; c <= 0; c++) {
		ck_assert_ptr_nonnull(lg_strerror(c));
		ck_assert_msg(strncmp(model__errname(c), "LG_", 3) == 0, "%d",
			      c);
	}
	ck_assert_str_eq(lg_strerror(LG_EMISMATCH),
			 "event does not fit the state");
	ck_assert_str_eq(lg_strerror(1), "unknown error");
	ck_assert_str_eq(lg_strerror(LG_ERR_MIN - 1), "unknown error");
	ck_assert_int_eq(lg_error_set(NULL, LG_EIO, "x"), LG_EIO);
}
END_TEST

void model_tests_event(Suite *s)
{
	TCase *tc = tcase_create("event_json");

	tcase_add_loop_test(tc, event_json_round_trip, 0,
			    sizeof(round_trip) / sizeof(round_trip[0]));
	tcase_add_loop_test(tc, event_json_refused, 0,
			    sizeof(bad_events) / sizeof(bad_events[0]));
	tcase_add_test(tc, event_type_names);
	tcase_add_test(tc, event_time_sequence);
	tcase_add_test(tc, event_canonical_json);
	tcase_add_test(tc, event_errors_table);
	suite_add_tcase(s, tc);
	tc = tcase_create("event_time");
	tcase_add_test(tc, event_time);
	tcase_add_test(tc, event_time_user);
	tcase_add_test(tc, event_time_user_edges);
	suite_add_tcase(s, tc);
}
