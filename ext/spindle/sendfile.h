/* Spindle::HTTP::FileBody.sendfile (sendfile.c): file to socket in the kernel. */
#ifndef SPINDLE_SENDFILE_H
#define SPINDLE_SENDFILE_H

#include <ruby.h>

void sp_init_sendfile(VALUE mHTTP);

#endif
