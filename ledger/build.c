/*
 * What every process exports the same way: the build it runs (version and
 * commit, baked in by the Makefile) and the standard Prometheus process
 * metrics (client libraries' process_* names, read from /proc/self), so
 * that serve's and watch's /metrics are comparable with any other job.
 */
#include "ledger/ledger.h"

#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#ifndef GPULEDGER_VERSION
#define GPULEDGER_VERSION "0.0.0-dev"
#endif
#ifndef GPULEDGER_COMMIT
#define GPULEDGER_COMMIT "unknown"
#endif

const char *lg_version(void)
{
	return GPULEDGER_VERSION;
}

const char *lg_commit(void)
{
	return GPULEDGER_COMMIT;
}

/* Fields 14 (utime), 15 (stime), 22 (starttime), 23 (vsize) and 24 (rss)
 * of /proc/self/stat, after the command name (which may hold spaces). */
static bool proc_stat(unsigned long long f[5])
{
	char buf[1024], *p;
	FILE *fp = fopen("/proc/self/stat", "r");
	size_t n;
	bool ok;

	if (fp == NULL)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, fp);
	fclose(fp);
	buf[n] = '\0';
	if ((p = strrchr(buf, ')')) == NULL)
		return false;
	/* After ") ": field 3 (state) ... */
	ok = sscanf(p + 2,
		    "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu "
		    "%*d %*d %*d %*d %*d %*d %llu %llu %llu",
		    &f[0], &f[1], &f[2], &f[3], &f[4]) == 5;
	return ok;
}

/* The boot time (btime of /proc/stat), for process_start_time_seconds. */
static unsigned long long boot_time_s(void)
{
	char line[256];
	unsigned long long bt = 0;
	FILE *fp = fopen("/proc/stat", "r");

	if (fp == NULL)
		return 0;
	while (fgets(line, sizeof(line), fp) != NULL)
		if (sscanf(line, "btime %llu", &bt) == 1)
			break;
	fclose(fp);
	return bt;
}

static unsigned long open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;
	unsigned long n = 0;

	if (d == NULL)
		return 0;
	while ((de = readdir(d)) != NULL)
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n > 0 ? n - 1 : 0; /* the directory's own descriptor */
}

size_t lg_metrics_common(char *buf, size_t cap)
{
	unsigned long long f[5];
	double tck = (double)sysconf(_SC_CLK_TCK);
	long page = sysconf(_SC_PAGESIZE);
	struct rlimit rl;
	size_t len = 0;
	int n;

	LG_ASSERT(buf != NULL || cap == 0);
#define PUT(...)                                                   \
	do {                                                       \
		n = snprintf(buf + len, len < cap ? cap - len : 0, \
			     __VA_ARGS__);                         \
		if (n > 0)                                         \
			len += (size_t)n;                          \
	} while (0)

	PUT("# HELP gpuledger_build_info The running build (value 1).\n"
	    "# TYPE gpuledger_build_info gauge\n"
	    "gpuledger_build_info{version=\"%s\",commit=\"%s\"} 1\n",
	    lg_version(), lg_commit());
	if (proc_stat(f) && tck > 0) {
		PUT("# HELP process_cpu_seconds_total Total user and system "
		    "CPU time spent in seconds.\n"
		    "# TYPE process_cpu_seconds_total counter\n"
		    "process_cpu_seconds_total %.2f\n",
		    (double)(f[0] + f[1]) / tck);
		PUT("# HELP process_start_time_seconds Start time of the "
		    "process since unix epoch in seconds.\n"
		    "# TYPE process_start_time_seconds gauge\n"
		    "process_start_time_seconds %.2f\n",
		    (double)boot_time_s() + (double)f[2] / tck);
		PUT("# HELP process_virtual_memory_bytes Virtual memory size "
		    "in bytes.\n"
		    "# TYPE process_virtual_memory_bytes gauge\n"
		    "process_virtual_memory_bytes %llu\n",
		    f[3]);
		PUT("# HELP process_resident_memory_bytes Resident memory "
		    "size in bytes.\n"
		    "# TYPE process_resident_memory_bytes gauge\n"
		    "process_resident_memory_bytes %llu\n",
		    f[4] * (unsigned long long)(page > 0 ? page : 4096));
	}
	PUT("# HELP process_open_fds Number of open file descriptors.\n"
	    "# TYPE process_open_fds gauge\n"
	    "process_open_fds %lu\n",
	    open_fds());
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0)
		PUT("# HELP process_max_fds Maximum number of open file "
		    "descriptors.\n"
		    "# TYPE process_max_fds gauge\n"
		    "process_max_fds %llu\n",
		    (unsigned long long)rl.rlim_cur);
#undef PUT
	return len;
}
