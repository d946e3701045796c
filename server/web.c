/* The web page's own files (GET / and GET /{file}): a fixed set of extensions from --web-dir, no
 * subdirectories, with a Content-Security-Policy that lets the page load only itself. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "response.h"

static enum MHD_Result srv__web(srv_t *s, srv_request *r, const char *name) {
  static const struct {
    const char *ext, *type;
  } types[] = {{".html", "text/html; charset=utf-8"}, {".js", "text/javascript; charset=utf-8"},
               {".css", "text/css; charset=utf-8"},   {".svg", "image/svg+xml"},
               {".png", "image/png"},                 {".ico", "image/x-icon"},
               {".txt", "text/plain; charset=utf-8"}};
  const char *type = NULL;
  const char *dot = strrchr(name, '.');
  for (size_t i = 0; dot && i < sizeof types / sizeof types[0]; i++)
    if (!strcmp(dot, types[i].ext)) type = types[i].type;
  for (const char *p = name; *p; p++)
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
          *p == '.' || *p == '-' || *p == '_'))
      type = NULL;
  if (!type || name[0] == '.')
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such page or route: %s", r->path);
  char path[1400];
  snprintf(path, sizeof path, "%.1000s/%.128s", s->cfg.web_dir, name);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  struct stat sb;
  if (fd < 0 || fstat(fd, &sb) != 0) {
    if (fd >= 0) close(fd);
    return srv_error(s, r, TH_ERR_NOT_FOUND, "not_found", NULL, "no such page or route: %s", r->path);
  }
  struct MHD_Response *resp = srv_response_fd(fd, 0, (uint64_t)sb.st_size);
  if (!resp) return MHD_NO;
  MHD_add_response_header(resp, "Content-Type", type);
  MHD_add_response_header(resp, "Cache-Control", "no-cache");
  /* the page loads only its own script and style files and talks only to this origin; nothing inline runs */
  if (!strcmp(type, types[0].type))
    MHD_add_response_header(resp, "Content-Security-Policy",
                            "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                            "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'");
  return srv_queue(s, r, 200, resp);
}

enum MHD_Result srv_route_web(srv_t *s, srv_request *r, const srv_route_args *a) {
  return srv__web(s, r, a->nseg ? a->seg[0] : "index.html");
}
