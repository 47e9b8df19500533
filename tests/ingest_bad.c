/*
 * Bad input (DESIGN 9): malformed lines, wrong types, unknown kinds, bad
 * times, objects without identity and oversized lines are NOTEs, and the
 * valid events around them are all there. Time: a line's time is the event
 * time, lines without one keep it, earlier ones are clamped; the stream's
 * end is a TICK. The pod fast path must give exactly the log the full path
 * gives.
 */
#include "tests/ingest_tests.h"

#define NOGPU_SPEC \
	"{'containers':[{'name':'c','resources':{'requests':{'cpu':'1'}}}]}"
#define GOOD(n) ADD(GPOD("ns", n, n, "n1", "nvidia.com/H100", "1"))
#define GOOD_EV(n)                                                   \
	"RESERVE Pod ns/" n "#" n " h100 0>1; ALLOC Pod ns/" n "#" n \
	" h100 0>1 @n1"

/* Each bad line between two good ones: the NOTE and both pods. */
static const struct {
	const char *line, *note;
} bad_lines[] = {
	{"not json", "MalformedLine"},
	{"[1,2]", "MalformedLine"},
	{"{'type':'ADDED'}", "MalformedLine"},
	{"{'type':'ADDED','object':[]}", "MalformedLine"},
	{"{'type':'WHAT','object':{}}", "MalformedLine"},
	{"{'type':5,'object':{}}", "MalformedLine"},
	{"{'type':'ADDED','time':'yesterday','object':" NSOBJ("tenant-a") "}",
	 "MalformedLine"},
	{"{'type':'ADDED','time':5,'object':" NSOBJ("tenant-a") "}",
	 "MalformedLine"},
	{ADD("{'apiVersion':'v1','kind':'Secret'," META("ns", "s", "s") "}"),
	 "UnknownKind"},
	{ADD("{'apiVersion':'v2','kind':'Pod'," META("ns", "s", "s") "}"),
	 "UnknownKind"},
	{ADD("{'kind':'Pod'}"), "UnknownKind"},
	{ADD("{'apiVersion':'v1','kind':'Pod','metadata':{'name':'x'}}"),
	 "InvalidObject"},
	{ADD("{'apiVersion':'v1','kind':'Pod','metadata':5}"), "InvalidObject"},
	{ADD("{'apiVersion':'v1','kind':'Node','metadata':{'name':7}}"),
	 "InvalidObject"},
	{ADD("{'apiVersion':'v1','kind':'Pod'," META(
		 "Bad_NS", "p", "u") ",'spec':{'nodeName':'n1','containers':[{'"
				     "resources':{'limits':"
				     "{'nvidia.com/H100':'1'}}}]}}"),
	 "InvalidObject"},
	{ADD("{'apiVersion':'v1','kind':'Pod'," META(
		 "ns", "p", "u") ",'spec':{'containers':{'resources':{'limits':"
				 "{'nvidia.com/H100':'1'}}}}}"),
	 "InvalidObject"},
	{ADD(VMI("ns", "vm", "v", "[{'class':7}]")), "InvalidObject"},
	{ADD(NSOBJ("Tenant_A")), "InvalidObject"},
	{"{'type':'ADDED','object':" POD("ns", "p", "u",
					 "{'nodeName':'n1',"
					 "'containers':[{'resources':{"
					 "'limits':{'cpu':'1'}}}]}") "",
	 "MalformedLine"},
	{ADD(POD("ns", "p", "u", "{'containers':[]}")) " trailing",
	 "MalformedLine"},
};

START_TEST(bad_lines_between_good)
{
	struct h h;
	char want[512];

	h_open(&h, CLASSES);
	h_feed(&h, GOOD("a"));
	h_feed(&h, bad_lines[_i].line);
	h_feed(&h, GOOD("b"));
	snprintf(want, sizeof(want), "%s; NOTE %s; %s", GOOD_EV("a"),
		 bad_lines[_i].note, GOOD_EV("b"));
	h_expect(&h, want, bad_lines[_i].line);
	h_close(&h);
}
END_TEST

/* Blank lines and bookmarks are no events; an oversized line is a NOTE;
 * ingest__oversized reports what a source skipped. */
START_TEST(bad_blank_bookmark_oversized)
{
	struct ingest_opts o = {.max_object_bytes = 256};
	struct lg_error err = {0};
	struct class_table t;
	char big[400];
	struct h h;

	h_open(&h, CLASSES);
	ingest_free(h.in);
	h_table(&t, CLASSES);
	o.classes = &t;
	ck_assert_int_eq(ingest_new(&h.in, h.lg, &o, &err), 0);
	class_table_release(&t);
	h_feed(&h, "");
	h_feed(&h, "  \t");
	h_feed(&h, "{'type':'BOOKMARK','object':{'metadata':{}}}");
	memset(big, ' ', sizeof(big));
	memcpy(big, "{\"type\":\"ADDED\"}", 16);
	h_raw(&h, big, sizeof(big));
	ck_assert_int_eq(ingest__oversized(h.in, 1u << 30, &err), 0);
	h_feed(&h, GOOD("a"));
	h_expect(&h, "NOTE Oversized; NOTE Oversized; " GOOD_EV("a"),
		 "oversized");
	h_close(&h);
}
END_TEST

/* Times: the line's time, kept, clamped (with a NOTE, DESIGN 4.1); a final TICK when later than the
 * horizon, and none when not. */
START_TEST(bad_times)
{
	static const char *const lines[] = {
		"{'type':'ADDED','time':'2026-03-01T10:00:00Z','object':" NSOBJ(
			"tenant-a") "}",
		"{'type':'ADDED','object':" NSOBJ("tenant-b") "}",
		"{'type':'ADDED','time':'2026-03-01T09:00:00Z','object':" NSOBJ(
			"tenant-c") "}",
		"{'type':'ADDED','time':'2026-03-01T11:00:00.5+01:00',"
		"'object':" NSOBJ("tenant-d") "}",
		"{'type':'BOOKMARK','time':'2026-03-01T12:00:00Z'}",
	};
	static const char *const want[] = {
		"2026-03-01T10:00:00.000000000Z", /* tenant-root */
		"2026-03-01T10:00:00.000000000Z", /* tenant-a */
		"2026-03-01T10:00:00.000000000Z", /* tenant-b: kept */
		"2026-03-01T10:00:00.000000000Z", /* NOTE TimeWentBack (1 h) */
		"2026-03-01T10:00:00.000000000Z", /* tenant-c: clamped */
		"2026-03-01T10:00:00.500000000Z", /* tenant-d: +01:00 */
		"2026-03-01T12:00:00.000000000Z", /* TICK */
	};
	struct lg_error err = {0};
	struct h h;

	h_open(&h, CLASSES);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++)
		h_feed(&h, lines[i]);
	ck_assert_int_eq(ingest__flush(h.in, &err), 0);
	ck_assert_int_eq(ingest__tick(h.in, ingest__time_ns(h.in), &err), 0);
	ck_assert_uint_eq(ledger_last_seq(h.lg), h.mark + 7);
	for (uint64_t i = 0; i < 7; i++) {
		state_t *st = NULL;
		char buf[64];

		ck_assert_int_eq(
			ledger_state_at(h.lg, h.mark + 1 + i, &st, NULL, &err),
			0);
		time_format_ns(state_time_ns(st), buf, sizeof(buf));
		ck_assert_msg(strcmp(buf, want[i]) == 0, "event %llu: %s",
			      (unsigned long long)i, buf);
		state_free(st);
	}
	/* Nothing later than the horizon: no second TICK. */
	ck_assert_int_eq(ingest__tick(h.in, ingest__time_ns(h.in), &err), 0);
	ck_assert_uint_eq(ledger_last_seq(h.lg), h.mark + 7);
	h_close(&h);
}
END_TEST

/* Lines that exercise the fast path's scanner: it must skip exactly what
 * the full path would skip. */
static const char *const fast_lines[] = {
	ADD(POD("ns", "plain", "u1", NOGPU_SPEC)),
	"{'object':" POD("ns", "first", "u2",
			 NOGPU_SPEC) ",'type':'ADDED',"
				     "'time':'2026-01-01T00:00:05Z'}",
	ADD(GPOD("ns", "gpu", "u3", "n1", "nvidia.com/L40S", "1")),
	MOD(POD("ns", "gpu", "u3", NOGPU_SPEC)),
	ADD(GPOD("ns", "gone", "u4", "n1", "nvidia.com/H100", "2")),
	DEL(GPOD("ns", "gone", "u4", "n1", "nvidia.com/H100", "2")),
	DEL(POD("ns", "never", "u5", NOGPU_SPEC)),
	/* The raw name only in an annotation: full path, nothing held. */
	ADD("{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns',"
	    "'name':'ann','annotations':{'x':'nvidia.com/H100'}},'spec':"
	    "{'containers':[]}}"),
	/* Escapes in the name, in other strings, and in keys. */
	ADD("{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns',"
	    "'name':'e\\u0073c','labels':{'a\\\\b':'c\\\\'}},'spec':{}}"),
	ADD("{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns',"
	    "'n\\u0061me':'k','uid':'u6'},'spec':{'nodeName':'n1',"
	    "'containers':[{'resources':{'limits':{'nvidia.com/"
	    "L40S':'1'}}}]}}"),
	/* An escaped key that jansson reads as the name of a cached pod. */
	ADD(GPOD("ns", "gpu2", "u7", "n1", "nvidia.com/L40S", "1")),
	MOD("{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns',"
	    "'name':'decoy','n\\u0061me':'gpu2','uid':'u7'},'spec':" NOGPU_SPEC
	    "}"),
	/* Projected GPU pods: other members dropped, sidecars, duplicate
	 * keys (the last wins), members of the wrong type. */
	ADD("{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns',"
	    "'name':'big','uid':'u8','labels':{'a':'b'},'managedFields':[{"
	    "'time':'2020-01-01T00:00:00Z','fieldsV1':{'f:spec':{}}}]},"
	    "'spec':{'volumes':[{'name':'v','configMap':{'name':'c'}}],"
	    "'initContainers':[{'name':'side','restartPolicy':'Always',"
	    "'image':'x','resources':{'limits':{'nvidia.com/H100':'1'}}}],"
	    "'containers':[{'name':'m','env':[{'name':'A','value':'1'}],"
	    "'ports':[{'containerPort':80}],'resources':{'limits':{'cpu':"
	    "'2','nvidia.com/H100':'2'},'requests':{'cpu':'1'}},"
	    "'livenessProbe':{'httpGet':{'path':'/','port':80}}}],"
	    "'nodeName':'n2','tolerations':[{'key':'k','operator':'Exists'}]},"
	    "'status':{'phase':'Running','conditions':[{'type':'Ready'}]}}"),
	ADD("{'apiVersion':'v1','kind':'Pod'," META(
		"ns", "dup",
		"u9") ",'spec':{'nodeName':'n1','containers':[{'resources':{'"
		      "limits':{"
		      "'nvidia.com/H100':'1'}}}]},'spec':{'containers':[]}}"),
	ADD("{'apiVersion':'v1','kind':'Pod'," META(
		"ns", "wrong",
		"u10") ",'spec':{'containers':{'resources':{'limits':{"
		       "'nvidia.com/H100':'1'}}}}}"),
	ADD("{'apiVersion':'v1','kind':'Pod'," META(
		"ns", "wrong2",
		"u11") ",'spec':{'containers':[5,{'resources':{'limits':{"
		       "'nvidia.com/H100':'1'}}}]}}"),
	ADD("{'apiVersion':'v1','kind':'Pod'," META(
		"ns", "wrong3",
		"u12") ",'spec':{'containers':[{'resources':{'limits':{"
		       "'nvidia.com/H100':1}}}]}}"),
	MOD("{'apiVersion':'v1','kind':'Pod'," META(
		"ns", "big",
		"u8") ",'spec':{'nodeName':'n2','containers':[{'resources':{'"
		      "limits':{"
		      "'nvidia.com/"
		      "H100':'2'}}}]},'status':{'phase':'Failed'}}"),
	/* kind and apiVersion of a nested object are not the pod's. */
	ADD("{'apiVersion':'v1','kind':'Secret','metadata':{'namespace':'ns',"
	    "'name':'s','ownerReferences':[{'apiVersion':'v1','kind':'Pod'}]}"
	    "}"),
	/* Numbers, literals, nesting, an empty object, an empty array. */
	ADD("{'apiVersion':'v1','kind':'Pod','metadata':{'namespace':'ns',"
	    "'name':'lit','generation':-1.5e3,'x':[true,false,null,{},[]]},"
	    "'spec':{}}"),
	/* The pod's time after the object, then a broken one. */
	"{'type':'MODIFIED','object':" POD(
		"ns", "plain", "u1",
		NOGPU_SPEC) ",'time':'2026-01-01T00:00:09Z'}",
	"{'type':'MODIFIED','object':" POD("ns", "plain", "u1",
					   NOGPU_SPEC) ",'time':'never'}",
	"{'type':'MODIFIED','object':" POD(
		"ns", "plain", "u1",
		NOGPU_SPEC) ",'time':'2026-01-01T00:00:10Z',}",
	"{'type':'MODIFIED','object':" POD("ns", "plain", "u1",
					   NOGPU_SPEC) " 'extra':1}",
	"{'type':'MODIFIED','object':{'apiVersion':'v1','kind':'Pod',"
	"'metadata':{'namespace':'ns','name':'x'},'spec':{]}}",
};

/* The same lines, the fast path on (ingest__line) and off (parsed here and
 * given to ingest__event); the logs must be equal, and the fast path must
 * have skipped the plain pods. */
START_TEST(bad_fast_path_equals_full_path)
{
	struct h a, b;
	struct ingest_counters c;
	char *la, *lb;

	h_open(&a, CLASSES);
	h_open(&b, CLASSES);
	for (size_t i = 0; i < sizeof(fast_lines) / sizeof(fast_lines[0]);
	     i++) {
		char *s = h_dq(fast_lines[i]);
		json_error_t je;
		json_t *doc = json_loads(s, 0, &je);
		struct lg_error err = {0};

		h_raw(&a, s, strlen(s));
		if (doc == NULL) {
			/* What the full path makes of it. */
			h_raw(&b, s, strlen(s));
		} else {
			const char *t =
				json_string_value(json_object_get(doc, "type"));
			const char *tm =
				json_string_value(json_object_get(doc, "time"));
			int64_t ns = 0;
			enum watch_type wt =
				strcmp(t, "ADDED") == 0	     ? WATCH_ADDED
				: strcmp(t, "MODIFIED") == 0 ? WATCH_MODIFIED
							     : WATCH_DELETED;

			if (tm != NULL && time_parse_ns(tm, &ns) != 0)
				h_raw(&b, s, strlen(s));
			else
				ck_assert_int_eq(
					ingest__event(
						b.in, wt,
						json_object_get(doc, "object"),
						ns, &err),
					0);
		}
		json_decref(doc);
		free(s);
	}
	la = h_take(&a);
	lb = h_take(&b);
	ck_assert_str_eq(la, lb);
	ck_assert_ptr_nonnull(strstr(la, "NOTE MalformedLine"));
	ck_assert_ptr_nonnull(strstr(la, "RELEASE Pod ns/gpu#u3"));
	ck_assert_ptr_nonnull(strstr(la, "RELEASE Pod ns/gone#u4"));
	ck_assert_ptr_nonnull(strstr(la, "RESERVE Pod ns/k#u6 l40s 0>1"));
	ck_assert_ptr_nonnull(strstr(la, "RELEASE Pod ns/gpu2#u7 l40s 1>0"));
	ck_assert_ptr_nonnull(strstr(la, "RESERVE Pod ns/big#u8 h100 0>3"));
	ck_assert_ptr_nonnull(strstr(la, "RELEASE Pod ns/big#u8 h100 3>0"));
	ck_assert_ptr_null(strstr(la, "ns/dup#"));
	ck_assert_int_eq(ingest__time_ns(a.in), ingest__time_ns(b.in));
	ingest__counters(a.in, &c);
	ck_assert_uint_ge(c.skipped_fast, 4);
	free(la);
	free(lb);
	h_close(&a);
	h_close(&b);
}
END_TEST

/* The documented limitation: a pod is judged by the members the mapping
 * reads, so one whose GPU-relevant members name no raw resource is skipped
 * unparsed, even when it is invalid elsewhere; the same object given to
 * ingest__event is noted. */
START_TEST(bad_fast_path_limitation)
{
	static const char line[] = ADD("{'apiVersion':'v1','kind':'Pod'," META(
		"ns", "p", "u1") ",'spec':5,'x':'nvidia.com/H100'}");
	struct ingest_counters c;
	struct h h;

	h_open(&h, CLASSES);
	h_feed(&h, line);
	ingest__counters(h.in, &c);
	ck_assert_uint_eq(c.skipped_fast, 1);
	h_expect(&h, "", "skipped");
	h_close(&h);
}
END_TEST

static uint64_t xrnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Mutated lines (bytes flipped, cut, duplicated) never crash the engine,
 * never fail it, and leave a ledger that verifies. */
START_TEST(bad_mutations)
{
	static const char *const base[] = {
		ADD(GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/H100", "1")),
		ADD(VMI("tenant-a", "vm", "v1", "[{'class':'h100','count':2}]")),
		ADD(CLAIM("tenant-a", "vm-instance-vm-gpu1", "c1",
			  "[" EXACT("h100.nvidia.com", "1") "]",
			  ALLOCATED("n1"))),
		ADD(TEN("tenant-root", "a",
			"{'gpuclass.cozystack.io/devices':'4'}")),
		ADD(NODE("n1", "{'nvidia.com/H100':'8'}", "")),
		DEL(GPOD("tenant-a", "p", "u1", "n1", "nvidia.com/H100", "1")),
	};
	static const char alphabet[] = "{}[]\",:\\ 0a-";
	struct lg_error err = {0};
	uint64_t seed = 0x9e3779b97f4a7c15ULL, bad = 0;
	struct h h;

	h_open(&h, CLASSES);
	for (int i = 0; i < 4000; i++) {
		char *s = h_dq(base[xrnd(&seed) % 6]);
		size_t n = strlen(s);
		int edits = 1 + (int)(xrnd(&seed) % 4);

		for (int e = 0; e < edits && n > 0; e++) {
			size_t at = xrnd(&seed) % n;

			switch (xrnd(&seed) % 3) {
			case 0:
				s[at] = alphabet[xrnd(&seed) %
						 (sizeof(alphabet) - 1)];
				break;
			case 1:
				n = at;
				break;
			default:
				s[at] = (char)(xrnd(&seed) & 0xff);
				break;
			}
		}
		ck_assert_int_eq(ingest__line(h.in, s, n, &err), 0);
		free(s);
	}
	ck_assert_int_eq(ingest__flush(h.in, &err), 0);
	ck_assert_int_eq(ledger__verify(h.lg, &bad, &err), 0);
	ck_assert_int_eq(model__state_check(ledger_state(h.lg), &err), 0);
	h_close(&h);
}
END_TEST

/* NOTEs are counted by code (the watcher's gpuledger_watch_notes_total):
 * every bad line under its code, ingest__note's code too, and codes past
 * the table's room under "other". */
START_TEST(bad_note_counts)
{
	static const char *const extra[] = {
		"C00", "C01", "C02", "C03", "C04", "C05", "C06", "C07",
		"C08", "C09", "C10", "C11", "C12", "C13", "C14", "C15",
		"C16", "C17", "C18", "C19", "C20", "C21", "C22", "C23",
		"C24", "C25", "C26", "C27", "C28", "C29",
	};
	size_t n_bad = sizeof(bad_lines) / sizeof(bad_lines[0]);
	struct ingest_note_count got[INGEST_NOTE_CODES + 1];
	struct lg_error err = {0};
	uint64_t sum = 0, other = 0;
	struct h h;
	size_t n;

	h_open(&h, CLASSES);
	for (size_t i = 0; i < n_bad; i++)
		h_feed(&h, bad_lines[i].line);
	ck_assert_int_eq(ingest__note(h.in, "ApiAbsent", "no API", &err), 0);
	n = ingest__note_counts(h.in, got, INGEST_NOTE_CODES + 1);
	for (size_t i = 0; i < n; i++) {
		uint64_t want = strcmp(got[i].code, "ApiAbsent") == 0;

		for (size_t j = 0; j < n_bad; j++)
			want += strcmp(bad_lines[j].note, got[i].code) == 0;
		ck_assert_msg(got[i].n == want, "%s: %llu, want %llu",
			      got[i].code, (unsigned long long)got[i].n,
			      (unsigned long long)want);
		sum += got[i].n;
	}
	ck_assert_uint_eq(sum, n_bad + 1);
	/* More codes than the table holds: the rest count as "other". */
	for (size_t i = 0; i < sizeof(extra) / sizeof(extra[0]); i++)
		ck_assert_int_eq(ingest__note(h.in, extra[i], "x", &err), 0);
	n = ingest__note_counts(h.in, got, INGEST_NOTE_CODES + 1);
	ck_assert_uint_eq(n, INGEST_NOTE_CODES);
	sum = 0;
	for (size_t i = 0; i < n; i++) {
		sum += got[i].n;
		if (strcmp(got[i].code, "other") == 0)
			other = got[i].n;
	}
	ck_assert_uint_eq(sum, n_bad + 1 + sizeof(extra) / sizeof(extra[0]));
	ck_assert_uint_gt(other, 0);
	h_close(&h);
}
END_TEST

INGEST_PART(bad)
{
	TCase *tc = tcase_create("bad_lines");

	tcase_add_loop_test(tc, bad_lines_between_good, 0,
			    sizeof(bad_lines) / sizeof(bad_lines[0]));
	tcase_add_test(tc, bad_blank_bookmark_oversized);
	tcase_add_test(tc, bad_mutations);
	tcase_add_test(tc, bad_note_counts);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_time");
	tcase_add_test(tc, bad_times);
	suite_add_tcase(s, tc);
	tc = tcase_create("bad_fast_path");
	tcase_add_test(tc, bad_fast_path_equals_full_path);
	tcase_add_test(tc, bad_fast_path_limitation);
	suite_add_tcase(s, tc);
}
