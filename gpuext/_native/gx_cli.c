/* gx_cli.c: minimap2's command line run inside gpuext, with atomic output.
 *
 * The -o file is opened under a temporary name next to it (mm_cli_output hook) and renamed to the
 * requested name only when the whole run succeeded; on any failure, including minimap2 calling
 * exit(), the temporary file is removed. FASTA/FASTQ records that fail to parse, which stock minimap2
 * skips with a warning, make the run fail: gpuext never drops a read silently. index_loaded, if
 * given, is asked once the index is loaded, before anything is written: non-zero ends the run (status 1). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <unistd.h>
#include "bseq.h"
#include "mmhook.h"
#include "gx_glue.h"

static char *gx_final_path, *gx_tmp_path;
static const char *gx_final_override; /* where the -o output goes instead (gpuext converts it to BAM) */

static void gx_drop_tmp(void)
{
	if (gx_tmp_path) unlink(gx_tmp_path);
	free(gx_tmp_path); free(gx_final_path);
	gx_tmp_path = gx_final_path = 0;
}

static const char *gx_output(const char *path)
{
	const char *slash;
	size_t dir_len;
	gx_drop_tmp(); /* -o given twice: only the last one counts, as in minimap2 */
	if (gx_final_override) path = gx_final_override;
	slash = strrchr(path, '/');
	dir_len = slash? (size_t)(slash - path + 1) : 0;
	gx_final_path = strdup(path);
	gx_tmp_path = (char*)malloc(strlen(path) + 64);
	sprintf(gx_tmp_path, "%.*s.%s.gpuext-%ld.tmp", (int)dir_len, path, path + dir_len, (long)getpid());
	return gx_tmp_path;
}

void gx_fatal(void)
{ /* a failed batch, from a pipeline thread: no half-written output, no atexit handlers racing the
   * other threads */
	fflush(stderr);
	if (gx_tmp_path) unlink(gx_tmp_path);
	_exit(1);
}

int gx_cli_run(int argc, char *argv[], const char *sam_hdr_extra, const char *output_override, int (*index_loaded)(void))
{
	static int registered = 0;
	int ret, saved_stdout = dup(STDOUT_FILENO); /* -o reopens stdout; a library caller wants it back */
	if (!registered) atexit(gx_drop_tmp), registered = 1;
	mm_cli_output = gx_output;
	gx_final_override = output_override;
	mm_cli_sam_hdr_extra = sam_hdr_extra;
	mm_cli_index_loaded = index_loaded;
	mm_bseq_n_parse_errors = 0;
	ret = mm_cli_main(argc, argv);
	mm_cli_index_loaded = 0;
	if (fflush(stdout) == EOF && ret == 0) {
		fprintf(stderr, "[E::gpuext] failed to write the output: %s\n", strerror(errno));
		ret = 1;
	}
	if (ret == 0 && mm_bseq_n_parse_errors > 0) {
		fprintf(stderr, "[E::gpuext] %d FASTA/FASTQ record(s) could not be read whole (malformed or truncated input, or paired files of different lengths)%s\n",
				mm_bseq_n_parse_errors, gx_tmp_path? "; no output written" : "");
		ret = 1;
	}
	if (gx_tmp_path) {
		if (ret == 0 && rename(gx_tmp_path, gx_final_path) != 0) {
			fprintf(stderr, "[E::gpuext] failed to rename the output to '%s': %s\n", gx_final_path, strerror(errno));
			ret = 1;
		}
		if (ret == 0) { free(gx_tmp_path); gx_tmp_path = 0; }
		gx_drop_tmp();
	}
	if (saved_stdout >= 0) {
		fflush(stdout);
		dup2(saved_stdout, STDOUT_FILENO);
		close(saved_stdout);
		clearerr(stdout);
	}
	return ret;
}
