/*
 * tools — the gpuledger command line: one binary, a table of subcommands.
 * Each subcommand is `int cmd_<name>(int argc, char **argv)` returning the
 * process exit status (0 ok, 1 a negative answer such as a failed audit,
 * 2 a usage or operating error).
 */
#ifndef GPULEDGER_TOOLS_H
#define GPULEDGER_TOOLS_H

#include <stdio.h>

struct subcommand {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);
};

int cmd_eval(int argc, char **argv);

/* Prints "gpuledger: <message>" to stderr. */
void tool_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
