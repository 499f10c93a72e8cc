/* cares NAME: resolve NAME with c-ares's ares_getaddrinfo(AF_UNSPEC), as Envoy does,
 * with the search list, ndots and servers c-ares reads from /etc/resolv.conf, and
 * print each distinct address on its own line (exit 0), or "ERROR <ares_strerror>"
 * (exit 2), like lookup.c. "cares -version" prints the version of the c-ares it
 * runs with. Built with gcc against Debian's libc-ares (-lcares). */
#include <ares.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/select.h>
#include <sys/socket.h>

#define MAXADDRS 64

struct result {
	int done, status;
	struct ares_addrinfo *ai;
};

static void callback(void *arg, int status, int timeouts, struct ares_addrinfo *ai) {
	struct result *r = arg;
	(void)timeouts;
	r->done = 1;
	r->status = status;
	r->ai = ai;
}

int main(int argc, char **argv) {
	struct ares_addrinfo_hints hints;
	struct ares_addrinfo_node *n;
	struct result r = {0, 0, NULL};
	ares_channel channel;
	char seen[MAXADDRS][INET6_ADDRSTRLEN];
	int nseen = 0, rc, i;

	if (argc != 2) {
		fprintf(stderr, "usage: cares NAME | cares -version\n");
		return 1;
	}
	if (strcmp(argv[1], "-version") == 0) {
		printf("%s\n", ares_version(NULL));
		return 0;
	}
	if ((rc = ares_library_init(ARES_LIB_INIT_ALL)) != ARES_SUCCESS ||
	    (rc = ares_init(&channel)) != ARES_SUCCESS) {
		fprintf(stderr, "c-ares init: %s\n", ares_strerror(rc));
		return 1;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	ares_getaddrinfo(channel, argv[1], NULL, &hints, callback, &r);
	while (!r.done) {
		fd_set readers, writers;
		struct timeval tv, *tvp;
		int nfds;
		FD_ZERO(&readers);
		FD_ZERO(&writers);
		nfds = ares_fds(channel, &readers, &writers);
		if (nfds == 0)
			break;
		tvp = ares_timeout(channel, NULL, &tv);
		select(nfds, &readers, &writers, NULL, tvp);
		ares_process(channel, &readers, &writers);
	}
	if (!r.done || r.status != ARES_SUCCESS) {
		printf("ERROR %s\n", r.done ? ares_strerror(r.status) : "no answer");
		return 2;
	}
	for (n = r.ai->nodes; n != NULL; n = n->ai_next) {
		char buf[INET6_ADDRSTRLEN];
		const void *a;
		if (n->ai_family == AF_INET)
			a = &((struct sockaddr_in *)n->ai_addr)->sin_addr;
		else if (n->ai_family == AF_INET6)
			a = &((struct sockaddr_in6 *)n->ai_addr)->sin6_addr;
		else
			continue;
		if (inet_ntop(n->ai_family, a, buf, sizeof buf) == NULL)
			continue;
		for (i = 0; i < nseen && strcmp(seen[i], buf) != 0; i++)
			;
		if (i < nseen || nseen == MAXADDRS)
			continue;
		strcpy(seen[nseen++], buf);
		printf("%s\n", buf);
	}
	ares_freeaddrinfo(r.ai);
	ares_destroy(channel);
	ares_library_cleanup();
	return 0;
}
