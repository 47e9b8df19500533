/*
 * Signed notes (model/note.c): the known answers of Go's sumdb/note tests
 * and of the C2SP signed-note example, signatures of unknown keys ignored,
 * a note no known key verifies refused, every flipped bit of a signed
 * checkpoint refused.
 */
#include "tests/model_tests.h"

static const char peter_skey[] =
	"PRIVATE+KEY+PeterNeumann+c74f20a3+"
	"AYEKFALVFGyNhPJEMzD1QIDr+Y7hfZx09iUvxdXHKDFz";
static const char peter_vkey[] =
	"PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW";
static const char enoch_vkey[] =
	"EnochRoot+af0cfe78+ATtqJ7zOtqQtYqOo0CpvDXNlMhV3HeJDpjrASKGLWdop";
static const char go_text[] =
	"If you think cryptography is the answer to your problem,\n"
	"then you don't know what your problem is.\n";
static const char peter_sig[] =
	"\xe2\x80\x94 PeterNeumann x08go/ZJkuBS9UG/SffcvIAQxVBtiFupLLr8pAcElZ"
	"InNIuGUgYN1FFYC2pZSNXgKvqfqdngotpRZb6KE6RyyBwJnAM=\n";
static const char enoch_sig[] =
	"\xe2\x80\x94 EnochRoot rwz+eBzmZa0SO3NbfRGzPCpDckykFXSdeX+MNtCOXm2/5n"
	"2tiOHp+vAF1aGrQ5ovTG01oOTGwnWLox33WWd1RvMc+QQ=\n";
static const char c2sp_vkey[] =
	"example.com/foo+530d903a+AekyeRrm56hApGFkyQR4ZCbV54Id2LKaANYcrnKv3U2k";
static const char c2sp_note[] =
	"This is an example message.\n\n"
	"\xe2\x80\x94 example.com/foo Uw2QOkn8srV1yJGh2VYRlL1Tnagv1YEq6TfXppzi"
	"2ONncAlTgK7Ztg1ERYNZXsYjOBH3mFXmRKuwHjG1Yu72IneyaQM=\n";

START_TEST(note_go_sign)
{
	struct note_signer s;
	char vk[NOTE_KEY_TEXT_MAX], sk[NOTE_KEY_TEXT_MAX], want[512];
	char *got;

	ck_assert_int_eq(note_signer_parse(&s, peter_skey, NULL), 0);
	note_verifier_format(&s, vk);
	ck_assert_str_eq(vk, peter_vkey);
	note_signer_format(&s, sk);
	ck_assert_str_eq(sk, peter_skey);
	got = note_sign(&s, go_text);
	snprintf(want, sizeof(want), "%s\n%s", go_text, peter_sig);
	ck_assert_str_eq(got, want);
	free(got);
}
END_TEST

START_TEST(note_open_known_answers)
{
	struct note_verifier v[2];
	char msg[1024];
	size_t tl;

	ck_assert_int_eq(note_verifier_parse(&v[0], peter_vkey, NULL), 0);
	ck_assert_int_eq(note_verifier_parse(&v[1], enoch_vkey, NULL), 0);
	/* Both signatures, either key known. */
	snprintf(msg, sizeof(msg), "%s\n%s%s", go_text, peter_sig, enoch_sig);
	ck_assert_int_eq(note_open(msg, strlen(msg), v, 2, &tl, NULL), 0);
	ck_assert_uint_eq(tl, strlen(go_text));
	ck_assert_int_eq(note_open(msg, strlen(msg), v, 1, &tl, NULL), 0);
	ck_assert_int_eq(note_open(msg, strlen(msg), v + 1, 1, &tl, NULL), 0);
	/* A known key's line that does not verify rejects the note, though
	 * another known key's line does verify; unknown, it is ignored. */
	{
		char bad[sizeof(enoch_sig)];
		struct lg_error err = {0};
		size_t at;

		strcpy(bad, enoch_sig);
		at = strlen(bad) - 10; /* inside the signature's base64 */
		bad[at] = bad[at] == 'A' ? 'B' : 'A';
		snprintf(msg, sizeof(msg), "%s\n%s%s", go_text, peter_sig, bad);
		ck_assert_int_eq(note_open(msg, strlen(msg), v, 2, &tl, &err),
				 LG_EMISMATCH);
		ck_assert_msg(strstr(err.msg, "EnochRoot") != NULL, "%s",
			      err.msg);
		ck_assert_int_eq(note_open(msg, strlen(msg), v, 1, &tl, NULL),
				 0);
		snprintf(msg, sizeof(msg), "%s\n%s%s", go_text, bad, peter_sig);
		ck_assert_int_eq(note_open(msg, strlen(msg), v, 2, &tl, NULL),
				 LG_EMISMATCH);
		snprintf(msg, sizeof(msg), "%s\n%s%s", go_text, peter_sig,
			 enoch_sig);
	}
	/* The C2SP example. */
	ck_assert_int_eq(note_verifier_parse(&v[0], c2sp_vkey, NULL), 0);
	ck_assert_int_eq(note_open(c2sp_note, strlen(c2sp_note), v, 1, &tl,
				   NULL),
			 0);
	/* No known key: refused, whatever else signed it. */
	ck_assert_int_ne(note_open(msg, strlen(msg), v, 1, &tl, NULL), 0);
}
END_TEST

START_TEST(note_bad_keys)
{
	struct note_verifier v;
	struct note_signer s;
	char k[sizeof(peter_vkey)];

	/* A changed ID, a truncated key, another algorithm. */
	strcpy(k, peter_vkey);
	k[14] = k[14] == '0' ? '1' : '0';
	ck_assert_int_ne(note_verifier_parse(&v, k, NULL), 0);
	ck_assert_int_ne(note_verifier_parse(&v, "PeterNeumann+c74f20a3+AR",
					     NULL),
			 0);
	ck_assert_int_ne(note_verifier_parse(&v, "x+00000000+", NULL), 0);
	ck_assert_int_ne(note_signer_parse(&s, peter_vkey, NULL), 0);
	ck_assert_int_ne(note_signer_from_seed(&s, "bad name",
					       (const uint8_t *)peter_vkey,
					       NULL),
			 0);
}
END_TEST

/* A signed checkpoint: accepted, cosignatures of other keys ignored, and
 * every single flipped bit refused. */
START_TEST(note_checkpoint_flips)
{
	struct note_signer s;
	struct note_verifier v;
	uint8_t seed[32], root[32], back[32];
	char vk[NOTE_KEY_TEXT_MAX], origin[NOTE_NAME_MAX + 1], *body, *note;
	char *cosigned;
	size_t tl, n;
	uint64_t size;

	for (int i = 0; i < 32; i++)
		seed[i] = (uint8_t)(i * 7 + 1), root[i] = (uint8_t)(255 - i);
	ck_assert_int_eq(note_signer_from_seed(&s, "gpuledger.example/prod",
					       seed, NULL),
			 0);
	note_verifier_format(&s, vk);
	ck_assert_int_eq(note_verifier_parse(&v, vk, NULL), 0);
	body = tlog_checkpoint_text(s.name, 1234, root);
	note = note_sign(&s, body);
	n = strlen(note);
	ck_assert_int_eq(note_open(note, n, &v, 1, &tl, NULL), 0);
	ck_assert_int_eq(tlog_checkpoint_parse(note, tl, origin, &size, back,
					       NULL),
			 0);
	ck_assert_str_eq(origin, s.name);
	ck_assert_uint_eq(size, 1234);
	ck_assert_mem_eq(back, root, 32);
	/* A witness cosignature line of an unknown key is ignored. */
	cosigned = malloc(n + 256);
	snprintf(cosigned, n + 256,
		 "%s\xe2\x80\x94 witness.example/w1 AAAAAAAAAAAAAAAAAAAAAAAAAA"
		 "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
		 "AAAAAAAAAA==\n",
		 note);
	ck_assert_int_eq(note_open(cosigned, strlen(cosigned), &v, 1, &tl,
				   NULL),
			 0);
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 8; b++) {
			note[i] ^= (char)(1 << b);
			ck_assert_msg(note_open(note, n, &v, 1, &tl, NULL) != 0,
				      "bit %d of byte %zu flipped verifies", b,
				      i);
			note[i] ^= (char)(1 << b);
		}
	free(cosigned);
	free(note);
	free(body);
}
END_TEST

MODEL_PART(note)
{
	TCase *tc = tcase_create("note");

	tcase_add_test(tc, note_go_sign);
	tcase_add_test(tc, note_open_known_answers);
	tcase_add_test(tc, note_bad_keys);
	tcase_add_test(tc, note_checkpoint_flips);
	suite_add_tcase(s, tc);
}
