/* Tests of the class table (model/classes.c): DESIGN 2, Appendix A. */
#include "model/model_int.h"
#include "tests/model_tests.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* The longest DNS-1123 label. */
#define L63 "a23456789012345678901234567890123456789012345678901234567890123"

/* The canonical form of a whole table: a list of class definitions in table
 * order. Caller frees. */
static char *table_text(const struct class_table *t)
{
	json_t *list = json_array();
	char *s;

	for (size_t i = 0; i < t->n; i++)
		json_array_append_new(list, gpu_class_to_json(&t->classes[i]));
	s = json_dumps(list, JSON_SORT_KEYS | JSON_COMPACT);
	json_decref(list);
	return s;
}

/* ---------------------------------------------------------------------- */

static const struct {
	const char *doc, *want;
} valid_tables[] = {
	{"{\"classes\":[]}", "[]"},
	/* Defaults: deviceClassName = name, empty lists. */
	{"{\"classes\":[{\"name\":\"h100\"}]}",
	 "[{\"deviceClassName\":\"h100\",\"name\":\"h100\",\"resourceNames\":[]"
	 ","
	 "\"tolerations\":[]}]"},
	/* null means absent; unknown members of the doc and entries ignored. */
	{"{\"x\":1,\"classes\":[{\"name\":\"a\",\"deviceClassName\":null,"
	 "\"resourceNames\":null,\"tolerations\":null,\"note\":[1]}]}",
	 "[{\"deviceClassName\":\"a\",\"name\":\"a\",\"resourceNames\":[],"
	 "\"tolerations\":[]}]"},
	/* The example of DESIGN 2. */
	{"{\"classes\": [{\"name\": \"h100\", \"deviceClassName\": \"h100\","
	 "\"resourceNames\": [\"nvidia.com/GH100_H100_SXM5_80GB\"],"
	 "\"tolerations\": [{\"key\": \"nvidia.com/gpu\", \"operator\": "
	 "\"Exists\", \"effect\": \"NoSchedule\"}]}]}",
	 "[{\"deviceClassName\":\"h100\",\"name\":\"h100\",\"resourceNames\":"
	 "[\"nvidia.com/GH100_H100_SXM5_80GB\"],\"tolerations\":[{\"effect\":"
	 "\"NoSchedule\",\"key\":\"nvidia.com/"
	 "gpu\",\"operator\":\"Exists\"}]}]"},
	/* Sorted by name; repeats within a class count once, first order kept;
	 * an empty toleration stays an empty object; "" stays present. */
	{"{\"classes\":[{\"name\":\"l4\",\"deviceClassName\":\"gpu.l4\","
	 "\"resourceNames\":[\"b/x\",\"a/x\",\"b/x\",\"a/x\",\"c/x\"],"
	 "\"tolerations\":[{},{\"value\":\"\",\"tolerationSeconds\":\"30\"}]},"
	 "{\"name\":\"a100\",\"resourceNames\":[\"nvidia.com/a100\"]}]}",
	 "[{\"deviceClassName\":\"a100\",\"name\":\"a100\",\"resourceNames\":"
	 "[\"nvidia.com/a100\"],\"tolerations\":[]},{\"deviceClassName\":"
	 "\"gpu.l4\",\"name\":\"l4\",\"resourceNames\":[\"b/x\",\"a/x\",\"c/"
	 "x\"],"
	 "\"tolerations\":[{},{\"value\":\"\"}]}]"},
	/* A deviceClassName may equal another class's name if no class uses
	 * it as deviceClassName; 63-character names are labels. */
	{"{\"classes\":[{\"name\":\"b\",\"deviceClassName\":\"x\"},{\"name\":"
	 "\"x\",\"deviceClassName\":\"b\"},{\"name\":\"" L63 "\"}]}",
	 "[{\"deviceClassName\":\"" L63 "\",\"name\":\"" L63 "\","
	 "\"resourceNames\":[],\"tolerations\":[]},"
	 "{\"deviceClassName\":\"x\",\"name\":\"b\",\"resourceNames\":[],"
	 "\"tolerations\":[]},{\"deviceClassName\":\"b\",\"name\":\"x\","
	 "\"resourceNames\":[],\"tolerations\":[]}]"},
};

START_TEST(classes_valid_table)
{
	json_t *doc = tj(valid_tables[_i].doc);
	struct class_table t;
	struct lg_error err = {0};
	char *got;
	int rc;

	rc = class_table_parse(&t, doc, &err);
	ck_assert_msg(rc == 0, "%s: %s", valid_tables[_i].doc, err.msg);
	got = table_text(&t);
	ck_assert_str_eq(got, valid_tables[_i].want);
	for (size_t i = 1; i < t.n; i++)
		ck_assert_int_lt(
			strcmp(t.classes[i - 1].name, t.classes[i].name), 0);
	free(got);
	class_table_release(&t);
	ck_assert_ptr_null(t.classes);
	ck_assert_uint_eq(t.n, 0);
	json_decref(doc);
}
END_TEST

/* ---------------------------------------------------------------------- */

static const struct {
	const char *doc;
	int code;
	const char *msg;
} invalid_tables[] = {
	{"[]", LG_EINVAL, "the class table is not an object"},
	{"null", LG_EINVAL, "the class table is not an object"},
	{"{}", LG_EINVAL, "classes is not a list"},
	{"{\"classes\":null}", LG_EINVAL, "classes is not a list"},
	{"{\"classes\":{\"name\":\"a\"}}", LG_EINVAL, "classes is not a list"},
	{"{\"classes\":[1]}", LG_EINVAL, "classes[0] is not an object"},
	{"{\"classes\":[{\"name\":\"a\"},null]}", LG_EINVAL,
	 "classes[1] is not an object"},
	/* Names. */
	{"{\"classes\":[{}]}", LG_EINVAL,
	 "classes[0].name is missing or not a string"},
	{"{\"classes\":[{\"name\":null}]}", LG_EINVAL,
	 "classes[0].name is missing or not a string"},
	{"{\"classes\":[{\"name\":7}]}", LG_EINVAL,
	 "classes[0].name is missing or not a string"},
	{"{\"classes\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"H100\"}]"
	 "}",
	 LG_EINVAL, "classes[2].name \"H100\" is not a DNS-1123 label"},
	{"{\"classes\":[{\"name\":\"\"}]}", LG_EINVAL,
	 "classes[0].name \"\" is not a DNS-1123 label"},
	{"{\"classes\":[{\"name\":\"a.b\"}]}", LG_EINVAL,
	 "classes[0].name \"a.b\" is not a DNS-1123 label"},
	{"{\"classes\":[{\"name\":\"-a\"}]}", LG_EINVAL,
	 "classes[0].name \"-a\" is not a DNS-1123 label"},
	{"{\"classes\":[{\"name\":\"" L63 "4\"}]}", LG_EINVAL,
	 "classes[0].name \"" L63 "4\" is not a DNS-1123 label"},
	{"{\"classes\":[{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"a\"}]}",
	 LG_EINVAL, "classes[2].name \"a\" repeats classes[0]"},
	/* deviceClassName. */
	{"{\"classes\":[{\"name\":\"a\",\"deviceClassName\":\"\"}]}", LG_EINVAL,
	 "classes[0].deviceClassName is not a non-empty string"},
	{"{\"classes\":[{\"name\":\"a\",\"deviceClassName\":3}]}", LG_EINVAL,
	 "classes[0].deviceClassName is not a non-empty string"},
	{"{\"classes\":[{\"name\":\"a\",\"deviceClassName\":[\"a\"]}]}",
	 LG_EINVAL, "classes[0].deviceClassName is not a non-empty string"},
	{"{\"classes\":[{\"name\":\"a\",\"deviceClassName\":\"g\"},{\"name\":"
	 "\"b\",\"deviceClassName\":\"g\"}]}",
	 LG_EINVAL,
	 "classes[1].deviceClassName \"g\" is also the "
	 "deviceClassName of class \"a\""},
	/* The default counts: b's deviceClassName "a" clashes with class a. */
	{"{\"classes\":[{\"name\":\"a\"},{\"name\":\"b\",\"deviceClassName\":"
	 "\"a\"}]}",
	 LG_EINVAL,
	 "classes[1].deviceClassName \"a\" is also the "
	 "deviceClassName of class \"a\""},
	/* resourceNames. */
	{"{\"classes\":[{\"name\":\"a\",\"resourceNames\":\"x/y\"}]}",
	 LG_EINVAL, "classes[0].resourceNames is not a list"},
	{"{\"classes\":[{\"name\":\"a\",\"resourceNames\":{}}]}", LG_EINVAL,
	 "classes[0].resourceNames is not a list"},
	{"{\"classes\":[{\"name\":\"a\",\"resourceNames\":[\"x/y\",\"\"]}]}",
	 LG_EINVAL, "classes[0].resourceNames[1] is not a non-empty string"},
	{"{\"classes\":[{\"name\":\"a\",\"resourceNames\":[null]}]}", LG_EINVAL,
	 "classes[0].resourceNames[0] is not a non-empty string"},
	{"{\"classes\":[{\"name\":\"a\",\"resourceNames\":[[\"x/y\"]]}]}",
	 LG_EINVAL, "classes[0].resourceNames[0] is not a non-empty string"},
	{"{\"classes\":[{\"name\":\"a\",\"resourceNames\":[\"p/q\",\"x/y\"]},"
	 "{\"name\":\"b\",\"resourceNames\":[\"z/z\"]},{\"name\":\"c\","
	 "\"resourceNames\":[\"w/w\",\"x/y\"]}]}",
	 LG_EINVAL,
	 "classes[2].resourceNames[1] \"x/y\" is also in class \"a\""},
	/* The earliest clash in input order is reported. */
	{"{\"classes\":[{\"name\":\"a\",\"resourceNames\":[\"z/z\",\"y/y\"]},"
	 "{\"name\":\"b\",\"resourceNames\":[\"y/y\",\"z/z\"]},{\"name\":\"c\","
	 "\"resourceNames\":[\"z/z\"]}]}",
	 LG_EINVAL,
	 "classes[1].resourceNames[0] \"y/y\" is also in class \"a\""},
	/* Tolerations. */
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":{}}]}", LG_EINVAL,
	 "classes[0].tolerations is not a list"},
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":[\"k\"]}]}", LG_EINVAL,
	 "classes[0].tolerations[0] is not an object"},
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":[{},null]}]}",
	 LG_EINVAL, "classes[0].tolerations[1] is not an object"},
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":[{\"key\":\"k\","
	 "\"tolerationSeconds\":30}]}]}",
	 LG_EINVAL,
	 "classes[0].tolerations[0].tolerationSeconds is not a string"},
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":[{\"key\":null}]}]}",
	 LG_EINVAL, "classes[0].tolerations[0].key is not a string"},
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":[{\"operator\":true}]}]"
	 "}",
	 LG_EINVAL, "classes[0].tolerations[0].operator is not a string"},
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":[{\"effect\":[]}]}]}",
	 LG_EINVAL, "classes[0].tolerations[0].effect is not a string"},
	{"{\"classes\":[{\"name\":\"a\",\"tolerations\":[{\"value\":1}]}]}",
	 LG_EINVAL, "classes[0].tolerations[0].value is not a string"},
};

START_TEST(classes_invalid_table)
{
	json_t *doc = tj(invalid_tables[_i].doc);
	struct class_table t;
	struct lg_error err = {0};
	int rc;

	rc = class_table_parse(&t, doc, &err);
	ck_assert_msg(rc == invalid_tables[_i].code, "%s: rc %d",
		      invalid_tables[_i].doc, rc);
	ck_assert_int_eq(err.code, invalid_tables[_i].code);
	ck_assert_str_eq(err.msg, invalid_tables[_i].msg);
	ck_assert_ptr_null(t.classes);
	ck_assert_uint_eq(t.n, 0);
	/* A NULL err is allowed. */
	ck_assert_int_eq(class_table_parse(&t, doc, NULL),
			 invalid_tables[_i].code);
	class_table_release(&t);
	json_decref(doc);
}
END_TEST

/* JSON strings may hold NUL bytes; a C copy would cut them, so they are
 * wrong wherever the table keeps a string. */
static const struct {
	const char *field, *msg;
} nul_cases[] = {
	{"name", "classes[0].name is missing or not a string"},
	{"deviceClassName",
	 "classes[0].deviceClassName is not a non-empty string"},
	{"resourceNames",
	 "classes[0].resourceNames[0] is not a non-empty string"},
	{"tolerations", "classes[0].tolerations[0].key is not a string"},
};

START_TEST(classes_nul_bytes)
{
	json_t *entry = json_pack("{s:s}", "name", "a");
	json_t *bad = json_stringn("x/\0y", 4), *doc;
	const char *f = nul_cases[_i].field;
	struct class_table t;
	struct lg_error err = {0};

	if (strcmp(f, "resourceNames") == 0)
		json_object_set_new(entry, f, json_pack("[o]", bad));
	else if (strcmp(f, "tolerations") == 0)
		json_object_set_new(entry, f, json_pack("[{s:o}]", "key", bad));
	else
		json_object_set_new(entry, f, bad);
	doc = json_pack("{s:[o]}", "classes", entry);
	ck_assert_int_eq(class_table_parse(&t, doc, &err), LG_EINVAL);
	ck_assert_str_eq(err.msg, nul_cases[_i].msg);
	ck_assert_uint_eq(t.n, 0);
	json_decref(doc);
}
END_TEST

/* A table of n classes c0..c(n-1), each with one raw name. */
static json_t *big_table(size_t n)
{
	json_t *list = json_array();
	char name[16], raw[32];

	for (size_t i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "c%zu", i);
		snprintf(raw, sizeof(raw), "example.com/r%zu", i);
		json_array_append_new(list,
				      json_pack("{s:s, s:[s]}", "name", name,
						"resourceNames", raw));
	}
	return json_pack("{s:o}", "classes", list);
}

START_TEST(classes_limit)
{
	json_t *ok = big_table(HOLDER_MAX_CLASSES);
	json_t *over = big_table(HOLDER_MAX_CLASSES + 1);
	struct class_table t;
	struct lg_error err = {0};

	ck_assert_int_eq(class_table_parse(&t, ok, &err), 0);
	ck_assert_uint_eq(t.n, HOLDER_MAX_CLASSES);
	/* Sorted by name as strings: c0, c1, c10, ... */
	ck_assert_str_eq(t.classes[0].name, "c0");
	ck_assert_str_eq(t.classes[1].name, "c1");
	ck_assert_str_eq(t.classes[2].name, "c10");
	ck_assert_ptr_nonnull(class_table_find(&t, "c63"));
	ck_assert_str_eq(
		model__class_table_by_resource(&t, "example.com/r42")->name,
		"c42");
	class_table_release(&t);
	ck_assert_int_eq(class_table_parse(&t, over, &err), LG_ELIMIT);
	ck_assert_str_eq(err.msg, "classes has 65 entries, more than 64");
	ck_assert_ptr_null(t.classes);
	ck_assert_uint_eq(t.n, 0);
	json_decref(ok);
	json_decref(over);
}
END_TEST

/* Lists longer than MODEL_MAX_ITEMS are a limit error, not a crash. */
START_TEST(classes_list_limits)
{
	json_t *rn = json_array(), *tol = json_array(), *doc;
	struct class_table t;
	struct lg_error err = {0};

	for (size_t i = 0; i <= MODEL_MAX_ITEMS; i++) {
		json_array_append_new(rn, json_string("x/y"));
		json_array_append_new(tol, json_object());
	}
	doc = json_pack("{s:[{s:s, s:o}]}", "classes", "name", "a",
			"resourceNames", rn);
	ck_assert_int_eq(class_table_parse(&t, doc, &err), LG_ELIMIT);
	ck_assert_str_eq(err.msg,
			 "classes[0].resourceNames has more than 4096 entries");
	json_decref(doc);
	doc = json_pack("{s:[{s:s, s:o}]}", "classes", "name", "a",
			"tolerations", tol);
	ck_assert_int_eq(class_table_parse(&t, doc, &err), LG_ELIMIT);
	ck_assert_str_eq(err.msg,
			 "classes[0].tolerations has more than 4096 entries");
	ck_assert_uint_eq(t.n, 0);
	json_decref(doc);
}
END_TEST

/* ---------------------------------------------------------------------- */

static const char lookup_doc[] =
	"{\"classes\":[{\"name\":\"l4\",\"deviceClassName\":\"gpu.example/l4\","
	"\"resourceNames\":[\"nvidia.com/AD104GL_L4\",\"nvidia.com/l4\"]},"
	"{\"name\":\"h100\",\"resourceNames\":[\"nvidia.com/GH100\"]},"
	"{\"name\":\"a100\"}]}";

static const struct {
	const char *by;		/* "name", "resource", "device" */
	const char *arg, *want; /* want NULL: not found */
} lookups[] = {
	{"name", "h100", "h100"},
	{"name", "l4", "l4"},
	{"name", "a100", "a100"},
	{"name", "b100", NULL},
	{"name", "", NULL},
	{"name", "H100", NULL},
	{"name", NULL, NULL},
	{"resource", "nvidia.com/AD104GL_L4", "l4"},
	{"resource", "nvidia.com/l4", "l4"},
	{"resource", "nvidia.com/GH100", "h100"},
	{"resource", "nvidia.com/gh100", NULL},
	{"resource", "requests.nvidia.com/GH100", NULL},
	{"resource", "a100", NULL},
	{"resource", NULL, NULL},
	{"device", "gpu.example/l4", "l4"},
	{"device", "l4", NULL},
	{"device", "h100", "h100"},
	{"device", "a100", "a100"},
	{"device", "", NULL},
	{"device", NULL, NULL},
};

static const struct gpu_class *lookup(const struct class_table *t,
				      const char *by, const char *arg)
{
	if (strcmp(by, "name") == 0)
		return class_table_find(t, arg);
	if (strcmp(by, "resource") == 0)
		return model__class_table_by_resource(t, arg);
	return model__class_table_by_device_class(t, arg);
}

START_TEST(classes_lookup)
{
	json_t *doc = tj(lookup_doc);
	struct class_table t, empty;
	const struct gpu_class *c;

	ck_assert_int_eq(class_table_parse(&t, doc, NULL), 0);
	class_table_init(&empty);
	c = lookup(&t, lookups[_i].by, lookups[_i].arg);
	if (lookups[_i].want == NULL) {
		ck_assert_ptr_null(c);
	} else {
		ck_assert_ptr_nonnull(c);
		ck_assert_str_eq(c->name, lookups[_i].want);
		/* Borrowed from the table, not a copy. */
		ck_assert(c >= t.classes && c < t.classes + t.n);
	}
	ck_assert_ptr_null(lookup(&empty, lookups[_i].by, lookups[_i].arg));
	ck_assert_ptr_null(lookup(NULL, lookups[_i].by, lookups[_i].arg));
	class_table_release(&t);
	json_decref(doc);
}
END_TEST

/* ---------------------------------------------------------------------- */

static const struct {
	const char *entry;
	int code;
	const char *out; /* canonical JSON, or the error message */
} entries[] = {
	{"{\"name\":\"t4\",\"resourceNames\":[\"nvidia.com/t4\",\"nvidia.com/"
	 "t4\"],"
	 "\"tolerations\":[{\"operator\":\"Exists\"}]}",
	 0,
	 "{\"deviceClassName\":\"t4\",\"name\":\"t4\",\"resourceNames\":"
	 "[\"nvidia.com/t4\"],\"tolerations\":[{\"operator\":\"Exists\"}]}"},
	{"{\"name\":\"t4\",\"tolerations\":[{\"key\":\"k\",\"operator\":"
	 "\"Equal\","
	 "\"value\":\"v\",\"effect\":\"NoExecute\",\"extra\":\"ignored\"}]}",
	 0,
	 "{\"deviceClassName\":\"t4\",\"name\":\"t4\",\"resourceNames\":[],"
	 "\"tolerations\":[{\"effect\":\"NoExecute\",\"key\":\"k\","
	 "\"operator\":"
	 "\"Equal\",\"value\":\"v\"}]}"},
	{"\"t4\"", LG_EINVAL, "class is not an object"},
	{"{\"name\":\"T4\"}", LG_EINVAL,
	 "class.name \"T4\" is not a DNS-1123 label"},
	{"{\"name\":\"t4\",\"tolerations\":[{\"key\":{}}]}", LG_EINVAL,
	 "class.tolerations[0].key is not a string"},
	/* A clash across classes is not the entry's business. */
	{"{\"name\":\"t4\",\"deviceClassName\":\"x\"}", 0,
	 "{\"deviceClassName\":\"x\",\"name\":\"t4\",\"resourceNames\":[],"
	 "\"tolerations\":[]}"},
};

START_TEST(classes_entry)
{
	json_t *v = tj(entries[_i].entry), *j;
	struct gpu_class c;
	struct lg_error err = {0};
	char *s;
	int rc = model__gpu_class_parse(&c, v, &err);

	ck_assert_int_eq(rc, entries[_i].code);
	if (rc < 0) {
		ck_assert_str_eq(err.msg, entries[_i].out);
		ck_assert_ptr_null(c.name);
		ck_assert_ptr_null(c.resource_names);
		ck_assert_ptr_null(c.tolerations);
	} else {
		j = gpu_class_to_json(&c);
		s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);
		ck_assert_str_eq(s, entries[_i].out);
		free(s);
		json_decref(j);
	}
	model__gpu_class_release(&c);
	model__gpu_class_release(
		&c); /* released twice: the second is a no-op */
	model__gpu_class_release(NULL);
	json_decref(v);
}
END_TEST

/* ---------------------------------------------------------------------- */

static const char copy_doc[] =
	"{\"classes\":[{\"name\":\"a\",\"deviceClassName\":\"d\","
	"\"resourceNames\":[\"x/1\",\"x/2\"],\"tolerations\":[{\"key\":\"k\"},"
	"{\"key\":\"k\",\"value\":\"\"},{}]},"
	"{\"name\":\"b\",\"resourceNames\":[\"x/2b\",\"x/1b\"],"
	"\"tolerations\":[{\"key\":\"k\"},{\"key\":\"k\"},{}]}]}";

/* A change to one field of a copy makes it unequal to the original. */
static void mutate(struct gpu_class *c, int which)
{
	static char other[] = "zz";

	switch (which) {
	case 0:
		c->name[0] = 'q';
		break;
	case 1:
		c->device_class[0] = 'q';
		break;
	case 2:
		c->resource_names[1][2] = '9';
		break;
	case 3:
		c->n_resource_names--;
		break;
	case 4:
		c->n_tolerations--;
		break;
	case 5: /* "" and absent differ */
		free((char *)c->tolerations[1].value);
		c->tolerations[1].value = NULL;
		break;
	case 6:
		free((char *)c->tolerations[2].effect);
		c->tolerations[2].effect = strdup(other);
		break;
	case 7:
		free((char *)c->tolerations[0].op);
		c->tolerations[0].op = strdup("Exists");
		break;
	}
}

START_TEST(classes_copy_equal)
{
	json_t *doc = tj(copy_doc);
	struct class_table t;
	struct gpu_class c;
	json_t *a, *b;

	ck_assert_int_eq(class_table_parse(&t, doc, NULL), 0);
	ck_assert(gpu_class_equal(&t.classes[0], &t.classes[0]));
	ck_assert(!gpu_class_equal(&t.classes[0], &t.classes[1]));
	ck_assert(!gpu_class_equal(&t.classes[0], NULL));
	ck_assert(!gpu_class_equal(NULL, &t.classes[0]));
	ck_assert(gpu_class_equal(NULL, NULL));
	gpu_class_copy(&c, &t.classes[0]);
	ck_assert(gpu_class_equal(&c, &t.classes[0]));
	ck_assert_ptr_ne(c.name, t.classes[0].name);
	ck_assert_ptr_ne(c.resource_names[0], t.classes[0].resource_names[0]);
	a = gpu_class_to_json(&c);
	b = gpu_class_to_json(&t.classes[0]);
	ck_assert(json_equal(a, b));
	json_decref(a);
	json_decref(b);
	mutate(&c, _i);
	ck_assert(!gpu_class_equal(&c, &t.classes[0]));
	ck_assert(!gpu_class_equal(&t.classes[0], &c));
	/* Restore the counts so that release frees everything. */
	if (_i == 3)
		c.n_resource_names++;
	if (_i == 4)
		c.n_tolerations++;
	model__gpu_class_release(&c);
	class_table_release(&t);
	json_decref(doc);
}
END_TEST

/* The copy of the copy, and of an empty class. */
START_TEST(classes_copy_shapes)
{
	json_t *doc = tj(copy_doc);
	struct class_table t;
	struct gpu_class c1, c2, e = {0}, ce;

	ck_assert_int_eq(class_table_parse(&t, doc, NULL), 0);
	gpu_class_copy(&c1, &t.classes[1]);
	gpu_class_copy(&c2, &c1);
	ck_assert(gpu_class_equal(&c2, &t.classes[1]));
	ck_assert_uint_eq(c2.n_resource_names, 2);
	ck_assert_str_eq(c2.resource_names[0], "x/2b");
	ck_assert_ptr_null(c2.tolerations[0].value);
	gpu_class_copy(&ce, &e);
	ck_assert(gpu_class_equal(&ce, &e));
	ck_assert_ptr_null(gpu_class_to_json(&ce)); /* no name: no definition */
	model__gpu_class_release(&c1);
	model__gpu_class_release(&c2);
	model__gpu_class_release(&ce);
	class_table_release(&t);
	json_decref(doc);
}
END_TEST

/* A hand-built class without deviceClassName prints the default. */
START_TEST(classes_to_json_default)
{
	char name[] = "h100", rn[] = "nvidia.com/h100";
	char *rns[] = {rn};
	struct toleration tol = {.key = "k", .effect = "NoSchedule"};
	struct gpu_class c = {.name = name,
			      .resource_names = rns,
			      .n_resource_names = 1,
			      .tolerations = &tol,
			      .n_tolerations = 1};
	json_t *j = gpu_class_to_json(&c);
	char *s = json_dumps(j, JSON_SORT_KEYS | JSON_COMPACT);

	ck_assert_str_eq(
		s, "{\"deviceClassName\":\"h100\",\"name\":\"h100\","
		   "\"resourceNames\":[\"nvidia.com/h100\"],\"tolerations\":"
		   "[{\"effect\":\"NoSchedule\",\"key\":\"k\"}]}");
	ck_assert_ptr_null(gpu_class_to_json(NULL));
	free(s);
	json_decref(j);
}
END_TEST

/* The canonical definition parses back to an equal class. */
START_TEST(classes_round_trip)
{
	json_t *doc = tj(valid_tables[_i].doc), *j;
	struct class_table t;
	struct gpu_class c;

	ck_assert_int_eq(class_table_parse(&t, doc, NULL), 0);
	for (size_t i = 0; i < t.n; i++) {
		j = gpu_class_to_json(&t.classes[i]);
		ck_assert_int_eq(model__gpu_class_parse(&c, j, NULL), 0);
		ck_assert(gpu_class_equal(&c, &t.classes[i]));
		model__gpu_class_release(&c);
		json_decref(j);
	}
	class_table_release(&t);
	json_decref(doc);
}
END_TEST

void model_tests_classes(Suite *s)
{
	TCase *tc;

	tc = tcase_create("classes_valid");
	tcase_add_loop_test(tc, classes_valid_table, 0, N(valid_tables));
	tcase_add_loop_test(tc, classes_round_trip, 0, N(valid_tables));
	suite_add_tcase(s, tc);

	tc = tcase_create("classes_invalid");
	tcase_add_loop_test(tc, classes_invalid_table, 0, N(invalid_tables));
	tcase_add_loop_test(tc, classes_nul_bytes, 0, N(nul_cases));
	tcase_add_test(tc, classes_limit);
	tcase_add_test(tc, classes_list_limits);
	suite_add_tcase(s, tc);

	tc = tcase_create("classes_lookup");
	tcase_add_loop_test(tc, classes_lookup, 0, N(lookups));
	suite_add_tcase(s, tc);

	tc = tcase_create("classes_entry");
	tcase_add_loop_test(tc, classes_entry, 0, N(entries));
	tcase_add_test(tc, classes_to_json_default);
	suite_add_tcase(s, tc);

	tc = tcase_create("classes_copy");
	tcase_add_loop_test(tc, classes_copy_equal, 0, 8);
	tcase_add_test(tc, classes_copy_shapes);
	suite_add_tcase(s, tc);
}
