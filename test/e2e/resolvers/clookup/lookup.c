/* lookup NAME: resolve NAME with getaddrinfo(AF_UNSPEC, SOCK_STREAM), as most
 * clients do, and print each distinct address on its own line (exit 0), or
 * "ERROR <gai_strerror>" (exit 2) so tests can tell NODATA from NXDOMAIN from
 * success. Built twice: against glibc (gcc) and musl (musl-gcc -static).
 * It lives outside the Go package directory because `go build` refuses .c
 * files in a package that does not use cgo. */
#include <arpa/inet.h>
#include <netdb.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#define MAXADDRS 64

int main(int argc, char **argv) {
	struct addrinfo hints, *res, *ai;
	char seen[MAXADDRS][INET6_ADDRSTRLEN];
	int nseen = 0, rc, i;

	if (argc != 2) {
		fprintf(stderr, "usage: lookup NAME\n");
		return 1;
	}
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	rc = getaddrinfo(argv[1], NULL, &hints, &res);
	if (rc != 0) {
		printf("ERROR %s\n", gai_strerror(rc));
		return 2;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		char buf[INET6_ADDRSTRLEN];
		const void *a;
		if (ai->ai_family == AF_INET)
			a = &((struct sockaddr_in *)ai->ai_addr)->sin_addr;
		else if (ai->ai_family == AF_INET6)
			a = &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr;
		else
			continue;
		if (inet_ntop(ai->ai_family, a, buf, sizeof buf) == NULL)
			continue;
		/* getaddrinfo repeats an address per socktype/protocol; print it once. */
		for (i = 0; i < nseen && strcmp(seen[i], buf) != 0; i++)
			;
		if (i < nseen || nseen == MAXADDRS)
			continue;
		strcpy(seen[nseen++], buf);
		printf("%s\n", buf);
	}
	freeaddrinfo(res);
	return 0;
}
