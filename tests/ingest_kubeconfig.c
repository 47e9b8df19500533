/*
 * kubeconfig and in-cluster configuration: which context, cluster and user
 * are chosen, inline -data fields, relative file names, token files that
 * rotate, and clear errors for missing fields and malformed YAML.
 */
#include "tests/ingest_tests.h"

#include "ingest/kube_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "PEM-CA\n", "CERT", "KEY!" in base64. */
#define B64_CA	 "UEVNLUNBCg=="
#define B64_CERT "Q0VSVA=="
#define B64_KEY	 "S0VZIQ"

static const char full_config[] =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: dev\n"
	"clusters:\n"
	"- name: c1\n"
	"  cluster:\n"
	"    server: https://10.0.0.1:6443/\n"
	"    certificate-authority-data: " B64_CA "\n"
	"- name: c2\n"
	"  cluster:\n"
	"    server: https://example.test:8443/prefix\n"
	"    certificate-authority: ca/ca.crt\n"
	"    insecure-skip-tls-verify: true\n"
	"users:\n"
	"- name: u-token\n"
	"  user:\n"
	"    token: sekret\n"
	"    tokenFile: /ignored/because/token/wins\n"
	"- name: u-cert\n"
	"  user:\n"
	"    client-certificate-data: " B64_CERT "\n"
	"    client-key-data: >-\n"
	"      S0V\n"
	"      ZIQ\n"
	"- name: u-files\n"
	"  user:\n"
	"    client-certificate: /abs/client.crt\n"
	"    client-key: rel/client.key\n"
	"    tokenFile: tok\n"
	"contexts:\n"
	"- name: dev\n"
	"  context: {cluster: c1, user: u-token, namespace: x}\n"
	"- name: cert\n"
	"  context: {cluster: c1, user: u-cert}\n"
	"- name: files\n"
	"  context: {cluster: c2, user: u-files}\n"
	"- name: anon\n"
	"  context: {cluster: c2}\n"
	"- name: ghost-cluster\n"
	"  context: {cluster: nope, user: u-token}\n"
	"- name: ghost-user\n"
	"  context: {cluster: c1, user: nope}\n"
	"- name: no-cluster\n"
	"  context: {user: u-token}\n";

static const struct good_row {
	const char *context;
	const char *server, *ctx, *ca_file, *ca_data, *cert_file, *cert_data,
		*key_file, *key_data, *token, *token_file;
	bool insecure;
} good_rows[] = {
	{NULL, "https://10.0.0.1:6443", "dev", NULL, "PEM-CA\n", NULL, NULL,
	 NULL, NULL, "sekret", "/ignored/because/token/wins", false},
	{"cert", "https://10.0.0.1:6443", "cert", NULL, "PEM-CA\n", NULL,
	 "CERT", NULL, "KEY!", NULL, NULL, false},
	{"files", "https://example.test:8443/prefix", "files", "/cfg/ca/ca.crt",
	 NULL, "/abs/client.crt", NULL, "/cfg/rel/client.key", NULL, NULL,
	 "/cfg/tok", true},
	{"anon", "https://example.test:8443/prefix", "anon", "/cfg/ca/ca.crt",
	 NULL, NULL, NULL, NULL, NULL, NULL, NULL, true},
};

static void eq_opt(const char *got, const char *want, const char *what)
{
	if (want == NULL)
		ck_assert_msg(got == NULL, "%s: got \"%s\", want none", what,
			      got);
	else
		ck_assert_msg(got != NULL && strcmp(got, want) == 0,
			      "%s: got \"%s\", want \"%s\"", what,
			      got ? got : "(null)", want);
}

START_TEST(config_good)
{
	const struct good_row *r = &good_rows[_i];
	struct kube_config c;
	struct lg_error err = {0};
	int rc = ingest__kube_config_parse(&c, full_config, strlen(full_config),
					   "/cfg", r->context, &err);

	ck_assert_msg(rc == 0, "row %d: %s", _i, err.msg);
	eq_opt(c.server, r->server, "server");
	eq_opt(c.context, r->ctx, "context");
	eq_opt(c.ca_file, r->ca_file, "ca_file");
	eq_opt(c.ca_data, r->ca_data, "ca_data");
	eq_opt(c.cert_file, r->cert_file, "cert_file");
	eq_opt(c.cert_data, r->cert_data, "cert_data");
	eq_opt(c.key_file, r->key_file, "key_file");
	eq_opt(c.key_data, r->key_data, "key_data");
	eq_opt(c.token, r->token, "token");
	eq_opt(c.token_file, r->token_file, "token_file");
	if (r->ca_data)
		ck_assert_uint_eq(c.ca_data_len, strlen(r->ca_data));
	if (r->key_data)
		ck_assert_uint_eq(c.key_data_len, strlen(r->key_data));
	ck_assert(c.insecure == r->insecure);
	ck_assert(!c.in_cluster);
	kube_config_release(&c);
	/* Released twice is harmless: release zeroes. */
	kube_config_release(&c);
	kube_config_release(NULL);
}
END_TEST

static const struct bad_row {
	const char *yaml;
	const char *context;
	int code;
	const char *msg; /* a part of the message */
} bad_rows[] = {
	/* Which context. */
	{full_config, "nope", LG_ENOENT, "no context named \"nope\""},
	{full_config, "ghost-cluster", LG_ENOENT, "no cluster named \"nope\""},
	{full_config, "ghost-user", LG_ENOENT, "no user named \"nope\""},
	{full_config, "no-cluster", LG_EINVAL, "has no cluster"},
	{"clusters: []\n", NULL, LG_EINVAL, "no current-context"},
	{"current-context: a\n", NULL, LG_ENOENT, "no context named \"a\""},
	/* Malformed YAML, with its line. */
	{"clusters: [\n", NULL, LG_EINVAL, "kubeconfig:2:"},
	{"a: b\n  c: d\n", NULL, LG_EINVAL, "kubeconfig:2:"},
	{"\tkey: v\n", NULL, LG_EINVAL, "kubeconfig:1:"},
	{"", NULL, LG_EINVAL, "empty kubeconfig"},
	{"- a\n- b\n", NULL, LG_EINVAL, "must be a mapping"},
	{"just text\n", NULL, LG_EINVAL, "must be a mapping"},
	/* Wrong shapes. */
	{"current-context: a\ncontexts: {a: b}\n", NULL, LG_EINVAL,
	 "kubeconfig:2: contexts must be a list"},
	{"current-context: a\ncontexts:\n- x\n", NULL, LG_EINVAL,
	 "kubeconfig:3: an entry of contexts must be a mapping"},
	{"current-context: a\ncontexts:\n- name: a\n", NULL, LG_EINVAL,
	 "has no context mapping"},
	{"current-context: [a]\n", NULL, LG_EINVAL,
	 "current-context must be a string"},
	/* Missing and bad fields of the cluster and user. */
	{"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
	 "clusters: [{name: c, cluster: {insecure-skip-tls-verify: true}}]\n",
	 NULL, LG_EINVAL, "kubeconfig:3: cluster \"c\" has no server"},
	{"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
	 "clusters: [{name: c, cluster: {server: 10.0.0.1:443}}]\n",
	 NULL, LG_EINVAL, "not an http(s) URL"},
	{"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
	 "clusters: [{name: c, cluster: {server: 'https://h', "
	 "certificate-authority-data: 'not base64!'}}]\n",
	 NULL, LG_EINVAL, "certificate-authority-data is not base64"},
	{"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
	 "clusters: [{name: c, cluster: {server: 'https://h', "
	 "certificate-authority-data: 'QUJD='}}]\n",
	 NULL, LG_EINVAL, "is not base64"},
	{"current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\n"
	 "clusters: [{name: c, cluster: {server: 'https://h', "
	 "insecure-skip-tls-verify: maybe}}]\n",
	 NULL, LG_EINVAL, "insecure-skip-tls-verify must be true or false"},
	{"current-context: a\n"
	 "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
	 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	 "users: [{name: u, user: {client-certificate: /c.crt}}]\n",
	 NULL, LG_EINVAL, "needs a client key"},
	{"current-context: a\n"
	 "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
	 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	 "users: [{name: u, user: {exec: {command: aws}}}]\n",
	 NULL, LG_EINVAL, "exec credentials are not supported"},
	{"current-context: a\n"
	 "contexts: [{name: a, context: {cluster: c, user: u}}]\n"
	 "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
	 "users: [{name: u, user: {token: {a: b}}}]\n",
	 NULL, LG_EINVAL, "kubeconfig:4: token must be a string"},
};

START_TEST(config_bad)
{
	const struct bad_row *r = &bad_rows[_i];
	struct kube_config c;
	struct lg_error err = {0};
	int rc = ingest__kube_config_parse(&c, r->yaml, strlen(r->yaml), NULL,
					   r->context, &err);

	ck_assert_msg(rc == r->code, "row %d: rc %d (%s)", _i, rc, err.msg);
	ck_assert_int_eq(err.code, r->code);
	ck_assert_msg(strstr(err.msg, r->msg) != NULL,
		      "row %d: message \"%s\" lacks \"%s\"", _i, err.msg,
		      r->msg);
	/* Nothing is left to free after an error. */
	ck_assert_ptr_null(c.server);
	ck_assert_ptr_null(c.context);
	ck_assert_ptr_null(c.ca_data);
	ck_assert_ptr_null(c.token);
}
END_TEST

/* YAML nulls mean "unset", and an empty server is missing. */
START_TEST(config_nulls)
{
	static const char y[] =
		"current-context: a\n"
		"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
		"clusters: [{name: c, cluster: {server: 'https://h', "
		"certificate-authority: ~, insecure-skip-tls-verify: null}}]\n"
		"users: [{name: u, user: {token: '', tokenFile: }}]\n";
	struct kube_config c;
	struct lg_error err = {0};

	ck_assert_int_eq(
		ingest__kube_config_parse(&c, y, strlen(y), NULL, NULL, &err),
		0);
	ck_assert_str_eq(c.server, "https://h");
	ck_assert_ptr_null(c.ca_file);
	/* A quoted empty string is a value, kept as given. */
	ck_assert_str_eq(c.token, "");
	ck_assert_ptr_null(c.token_file);
	ck_assert(!c.insecure);
	kube_config_release(&c);
}
END_TEST

/* ---------------------------------------------------------------------- */
/* Files: kube_config_load, token files, in-cluster.                       */

static char *tmpdir(void)
{
	char *d = strdup("/tmp/gpuledger-kube-XXXXXX");

	ck_assert_ptr_nonnull(d);
	ck_assert_ptr_nonnull(mkdtemp(d));
	return d;
}

static void rmrf(char *d)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
	ck_assert_int_eq(system(cmd), 0);
	free(d);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char p[512];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static const char tok_config[] =
	"current-context: a\n"
	"contexts: [{name: a, context: {cluster: c, user: u}}]\n"
	"clusters: [{name: c, cluster: {server: 'https://h:1', "
	"certificate-authority: ca.crt}}]\n"
	"users: [{name: u, user: {tokenFile: token}}]\n";

/* A relative tokenFile is relative to the kubeconfig's directory; the file
 * is read again on every call, so a rotated token is seen at once. */
START_TEST(config_token_file)
{
	char *d = tmpdir();
	char path[512];
	struct kube_config c;
	struct lg_error err = {0};
	char *tok = NULL;

	write_file(d, "config", tok_config);
	write_file(d, "token", "  first-token\n");
	snprintf(path, sizeof(path), "%s/config", d);
	ck_assert_int_eq(kube_config_load(&c, path, NULL, &err), 0);
	snprintf(path, sizeof(path), "%s/ca.crt", d);
	ck_assert_str_eq(c.ca_file, path);
	ck_assert_int_eq(ingest__kube_config_token(&c, &tok, &err), 0);
	ck_assert_str_eq(tok, "first-token");
	free(tok);
	write_file(d, "token", "second-token");
	ck_assert_int_eq(ingest__kube_config_token(&c, &tok, &err), 0);
	ck_assert_str_eq(tok, "second-token");
	free(tok);
	/* An empty token file means no token. */
	write_file(d, "token", " \n");
	ck_assert_int_eq(ingest__kube_config_token(&c, &tok, &err), 0);
	ck_assert_ptr_null(tok);
	/* A token file that went away is an error the caller retries. */
	snprintf(path, sizeof(path), "%s/token", d);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(ingest__kube_config_token(&c, &tok, &err), LG_ENOENT);
	ck_assert_ptr_null(tok);
	ck_assert_ptr_nonnull(strstr(err.msg, "token"));
	kube_config_release(&c);
	rmrf(d);
}
END_TEST

/* Without a path: $KUBECONFIG (its first existing file), ~/.kube/config,
 * then in-cluster. Each test runs in its own process, so the environment
 * may be changed. */
START_TEST(config_search_order)
{
	char *d = tmpdir();
	char env[1024], path[512];
	struct kube_config c;
	struct lg_error err = {0};

	write_file(d, "k1", tok_config);
	snprintf(path, sizeof(path), "%s/.kube", d);
	ck_assert_int_eq(mkdir(path, 0700), 0);
	write_file(d, ".kube/config",
		   "current-context: h\n"
		   "contexts: [{name: h, context: {cluster: c}}]\n"
		   "clusters: [{name: c, cluster: {server: 'http://home'}}]\n");
	setenv("HOME", d, 1);
	unsetenv("KUBERNETES_SERVICE_HOST");
	snprintf(env, sizeof(env), "%s/missing::%s/k1", d, d);
	setenv("KUBECONFIG", env, 1);
	ck_assert_int_eq(kube_config_load(&c, NULL, NULL, &err), 0);
	ck_assert_str_eq(c.server, "https://h:1");
	kube_config_release(&c);
	unsetenv("KUBECONFIG");
	ck_assert_int_eq(kube_config_load(&c, NULL, NULL, &err), 0);
	ck_assert_str_eq(c.server, "http://home");
	kube_config_release(&c);
	/* Nothing at all: not in a cluster either. */
	snprintf(path, sizeof(path), "%s/.kube/config", d);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(kube_config_load(&c, NULL, NULL, &err), LG_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "not in a cluster"));
	ck_assert_int_eq(kube_config_load(&c, NULL, "x", &err), LG_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "no kubeconfig found"));
	/* A named file that does not exist is named in the error. */
	ck_assert_int_eq(kube_config_load(&c, path, NULL, &err), LG_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, path));
	/* Errors in a file name the file and the line. */
	write_file(d, "bad", "current-context: a\nclusters: [\n");
	snprintf(path, sizeof(path), "%s/bad", d);
	ck_assert_int_eq(kube_config_load(&c, path, NULL, &err), LG_EINVAL);
	ck_assert_ptr_nonnull(strstr(err.msg, "/bad:3:"));
	rmrf(d);
}
END_TEST

START_TEST(config_in_cluster)
{
	char *d = tmpdir();
	char path[512];
	struct kube_config c;
	struct lg_error err = {0};
	char *tok = NULL;

	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	ck_assert_int_eq(ingest__kube_config_in_cluster(&c, d, &err),
			 LG_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "KUBERNETES_SERVICE_HOST"));
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	ck_assert_int_eq(ingest__kube_config_in_cluster(&c, d, &err),
			 LG_ENOENT);
	ck_assert_ptr_nonnull(strstr(err.msg, "service-account token"));
	ck_assert_ptr_null(c.server);
	write_file(d, "token", "sa-token\n");
	ck_assert_int_eq(ingest__kube_config_in_cluster(&c, d, &err), 0);
	ck_assert_str_eq(c.server, "https://10.96.0.1:443");
	ck_assert_ptr_null(c.ca_file);
	ck_assert(c.in_cluster);
	ck_assert_int_eq(ingest__kube_config_token(&c, &tok, &err), 0);
	ck_assert_str_eq(tok, "sa-token");
	free(tok);
	kube_config_release(&c);
	write_file(d, "ca.crt", "PEM");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	ck_assert_int_eq(ingest__kube_config_in_cluster(&c, d, &err), 0);
	ck_assert_str_eq(c.server, "https://[fd00::1]:443");
	snprintf(path, sizeof(path), "%s/ca.crt", d);
	ck_assert_str_eq(c.ca_file, path);
	kube_config_release(&c);
	rmrf(d);
}
END_TEST

#define N(a) ((int)(sizeof(a) / sizeof((a)[0])))

INGEST_PART(kubeconfig)
{
	TCase *tc = tcase_create("kubeconfig_parse");

	tcase_add_loop_test(tc, config_good, 0, N(good_rows));
	tcase_add_loop_test(tc, config_bad, 0, N(bad_rows));
	tcase_add_test(tc, config_nulls);
	suite_add_tcase(s, tc);
	tc = tcase_create("kubeconfig_files");
	tcase_add_test(tc, config_token_file);
	tcase_add_test(tc, config_search_order);
	tcase_add_test(tc, config_in_cluster);
	suite_add_tcase(s, tc);
}
