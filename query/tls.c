/*
 * TLS for serve (DESIGN 7, "As a Kubernetes admission webhook"): OpenSSL
 * driven through memory BIOs, so that the libuv loop keeps owning the
 * sockets. Bytes read from a socket are pushed into the connection's read
 * BIO; what OpenSSL wants sent is taken from its write BIO and written by
 * the connection layer (query/http.c) like a plain answer. Nothing here
 * blocks or reads a socket; a handshake advances only when bytes come.
 *
 * Reloading. cert-manager rewrites the secret behind a mounted volume (a
 * symlink swap), so the files are stat'ed on a timer; when the identity or
 * time of one changes a new SSL_CTX is built from them. Only if it loads
 * whole (chain, key, the key matching the certificate, the client CA) does
 * it replace the old one: connections already open keep the context they
 * were made with (OpenSSL counts the references), new ones get the new
 * certificate. A pair that does not load is logged once and the old one
 * stays, until the files change again.
 *
 * SSL types do not leave this file: the rest of query/ sees struct tls
 * and struct tls_conn only through query_int.h.
 */
#include "query/query_int.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct file_id {
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
	bool present;
};

struct tls {
	SSL_CTX *ctx;	       /* the current context; owned (one reference) */
	char *cert, *key, *ca; /* owned paths; ca may be NULL */
	struct file_id id[3];  /* cert, key, ca as last tried */
	struct tls_stats st;
};

struct tls_conn {
	struct tls *t;	  /* counts its handshake */
	SSL *ssl;	  /* owns its BIOs */
	BIO *rbio, *wbio; /* borrowed from ssl */
	bool established;
	bool failed;
};

/* The first OpenSSL error in the queue as text (the queue is emptied). */
static void ssl_reason(char *out, size_t cap)
{
	unsigned long e = ERR_get_error();

	if (e == 0)
		snprintf(out, cap, "unknown error");
	else
		ERR_error_string_n(e, out, cap);
	ERR_clear_error();
}

/* ALPN: this server speaks HTTP/1.1 only. A client that offers it (curl,
 * Go's net/http in the API server, which also offers h2) gets it; one that
 * offers only other protocols goes on without ALPN, as without the
 * extension, and is answered in HTTP/1.1 or not at all. */
static int alpn_select(SSL *ssl, const unsigned char **out,
		       unsigned char *outlen, const unsigned char *in,
		       unsigned int inlen, void *arg)
{
	static const unsigned char h11[] = "\x08http/1.1";

	if (SSL_select_next_proto((unsigned char **)out, outlen, h11,
				  sizeof(h11) - 1, in,
				  inlen) == OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_OK;
	return SSL_TLSEXT_ERR_NOACK;
}

static int ctx_build(const struct tls *t, SSL_CTX **out, struct lg_error *err)
{
	static const unsigned char sid[] = "gpuledger";
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	char why[256];
	const char *what = "context";

	*out = NULL;
	if (ctx == NULL)
		goto fail;
	/* TLS 1.0 and 1.1 are refused (DESIGN 7: TLS >= 1.2). */
	if (SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION) != 1)
		goto fail;
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
					 SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_session_id_context(ctx, sid, sizeof(sid) - 1);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	what = t->cert;
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1)
		goto fail;
	what = t->key;
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1)
		goto fail;
	what = "the key does not match the certificate";
	if (SSL_CTX_check_private_key(ctx) != 1)
		goto fail;
	if (t->ca != NULL) {
		STACK_OF(X509_NAME) * names;

		what = t->ca;
		if (SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1)
			goto fail;
		names = SSL_load_client_CA_file(t->ca);
		if (names == NULL)
			goto fail;
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(
			ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT,
			NULL);
	}
	*out = ctx;
	return 0;
fail:
	ssl_reason(why, sizeof(why));
	SSL_CTX_free(ctx);
	return lg_error_set(err, LG_EINVAL, "TLS: %s: %s", what, why);
}

static void file_id_of(const char *path, struct file_id *id)
{
	struct stat st;

	memset(id, 0, sizeof(*id));
	if (path == NULL || stat(path, &st) != 0)
		return;
	id->present = true;
	id->dev = st.st_dev;
	id->ino = st.st_ino;
	id->size = st.st_size;
	id->mtime = st.st_mtim;
}

static bool file_id_eq(const struct file_id *a, const struct file_id *b)
{
	return a->present == b->present && a->dev == b->dev &&
	       a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec &&
	       a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static void tls_ids(const struct tls *t, struct file_id id[3])
{
	file_id_of(t->cert, &id[0]);
	file_id_of(t->key, &id[1]);
	file_id_of(t->ca, &id[2]);
}

int query__tls_open(struct tls **out, const char *cert, const char *key,
		    const char *ca, struct lg_error *err)
{
	struct tls *t;
	int rc;

	*out = NULL;
	if (cert == NULL || key == NULL)
		return lg_error_set(err, LG_EINVAL,
				    "--tls-cert and --tls-key go together");
	t = lg_xmalloc(sizeof(*t));
	memset(t, 0, sizeof(*t));
	t->cert = lg_xstrdup(cert);
	t->key = lg_xstrdup(key);
	t->ca = ca ? lg_xstrdup(ca) : NULL;
	tls_ids(t, t->id);
	if ((rc = ctx_build(t, &t->ctx, err)) != 0) {
		query__tls_close(t);
		return rc;
	}
	*out = t;
	return 0;
}

void query__tls_close(struct tls *t)
{
	if (t == NULL)
		return;
	SSL_CTX_free(t->ctx);
	free(t->cert);
	free(t->key);
	free(t->ca);
	free(t);
}

int query__tls_reload(struct tls *t)
{
	struct file_id now[3];
	struct lg_error err = {0};
	SSL_CTX *ctx;

	tls_ids(t, now);
	if (file_id_eq(&now[0], &t->id[0]) && file_id_eq(&now[1], &t->id[1]) &&
	    file_id_eq(&now[2], &t->id[2]))
		return 0;
	memcpy(t->id, now, sizeof(now));
	if (ctx_build(t, &ctx, &err) != 0) {
		t->st.reload_errors++;
		fprintf(stderr,
			"gpuledger serve: not reloading the TLS files, "
			"keeping the certificate in use: %s\n",
			err.msg);
		return -1;
	}
	SSL_CTX_free(t->ctx);
	t->ctx = ctx;
	t->st.reloads++;
	fprintf(stderr, "gpuledger serve: reloaded the TLS certificate %s\n",
		t->cert);
	return 1;
}

/* ---------------------------------------------------------------------- */

struct tls_conn *query__tls_conn_new(struct tls *t)
{
	struct tls_conn *tc = lg_xmalloc(sizeof(*tc));

	memset(tc, 0, sizeof(*tc));
	tc->t = t;
	tc->ssl = SSL_new(t->ctx);
	tc->rbio = BIO_new(BIO_s_mem());
	tc->wbio = BIO_new(BIO_s_mem());
	if (tc->ssl == NULL || tc->rbio == NULL || tc->wbio == NULL)
		abort(); /* only memory can fail here */
	/* An empty read BIO means "more to come", not end of file. */
	BIO_set_mem_eof_return(tc->rbio, -1);
	SSL_set_bio(tc->ssl, tc->rbio, tc->wbio);
	SSL_set_accept_state(tc->ssl);
	return tc;
}

void query__tls_conn_free(struct tls_conn *tc)
{
	if (tc == NULL)
		return;
	SSL_free(tc->ssl);
	free(tc);
}

void query__tls_conn_input(struct tls_conn *tc, const char *p, size_t n)
{
	while (n > 0) {
		int w = BIO_write(tc->rbio, p, n > INT_MAX ? INT_MAX : (int)n);

		if (w <= 0)
			abort(); /* a memory BIO fails only without memory */
		p += w;
		n -= (size_t)w;
	}
}

/* What an SSL call's result means for the caller. */
static int ssl_result(struct tls_conn *tc, int r)
{
	switch (SSL_get_error(tc->ssl, r)) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		return 0;
	case SSL_ERROR_ZERO_RETURN:
		return -1; /* close_notify: the client is done */
	default:
		tc->failed = true;
		ERR_clear_error();
		return -1;
	}
}

int query__tls_conn_handshake(struct tls_conn *tc)
{
	int r;

	if (tc->established)
		return 1;
	if (tc->failed)
		return -1;
	r = SSL_do_handshake(tc->ssl);
	if (r == 1) {
		tc->established = true;
		tc->t->st.handshakes++;
		return 1;
	}
	r = ssl_result(tc, r);
	if (r < 0)
		tc->t->st.handshake_errors++;
	return r;
}

long query__tls_conn_read(struct tls_conn *tc, char *buf, size_t cap)
{
	int r;

	if (tc->failed)
		return -1;
	r = SSL_read(tc->ssl, buf, cap > INT_MAX ? INT_MAX : (int)cap);
	if (r > 0)
		return r;
	return ssl_result(tc, r);
}

int query__tls_conn_write(struct tls_conn *tc, const char *p, size_t n)
{
	while (n > 0) {
		int r = SSL_write(tc->ssl, p, n > INT_MAX ? INT_MAX : (int)n);

		if (r <= 0) {
			ssl_result(tc, r);
			return -1;
		}
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

const char *query__tls_conn_output(struct tls_conn *tc, size_t *len)
{
	char *p = NULL;
	long n = BIO_get_mem_data(tc->wbio, &p);

	*len = n > 0 ? (size_t)n : 0;
	return *len > 0 ? p : NULL;
}

void query__tls_conn_output_done(struct tls_conn *tc)
{
	(void)BIO_reset(tc->wbio);
}

void query__tls_conn_shutdown(struct tls_conn *tc)
{
	if (tc->established && !tc->failed) {
		SSL_shutdown(tc->ssl);
		ERR_clear_error();
	}
}

bool query__tls_conn_peer_cn(struct tls_conn *tc, char *cn, size_t cap)
{
	X509 *x;
	X509_NAME *subject;
	int n = -1, first;

	if (!tc->established || SSL_get_verify_result(tc->ssl) != X509_V_OK)
		return false;
	x = SSL_get1_peer_certificate(tc->ssl);
	if (x == NULL)
		return false;
	/* A subject with two CNs names two principals: OpenSSL's text
	 * lookup reads the first, Go and Kubernetes the last, so the same
	 * certificate would be one client here and another to the CA's
	 * other users. It maps to nothing (DESIGN 7): no role, as a
	 * certificate no cert: line names. */
	subject = X509_get_subject_name(x);
	first = X509_NAME_get_index_by_NID(subject, NID_commonName, -1);
	if (first >= 0 &&
	    X509_NAME_get_index_by_NID(subject, NID_commonName, first) < 0)
		n = X509_NAME_get_text_by_NID(subject, NID_commonName, cn,
					      (int)cap);
	X509_free(x);
	/* A CN with an embedded NUL or too long for cap maps to nothing. */
	return n > 0 && (size_t)n < cap && strlen(cn) == (size_t)n;
}

void query__tls_stats_get(const struct tls *t, struct tls_stats *st)
{
	const ASN1_TIME *na =
		X509_get0_notAfter(SSL_CTX_get0_certificate(t->ctx));
	struct tm tm;

	*st = t->st;
	st->not_after_s = 0;
	if (na != NULL && ASN1_TIME_to_tm(na, &tm) == 1)
		st->not_after_s = (int64_t)timegm(&tm);
}
