// walfs-growfs: grows a mounted walfs filesystem (tools/growfs.h).
#include "tools/growfs.h"

int main(int argc, char** argv) { return walfs::tools::GrowfsMain(argc, argv, "walfs-growfs"); }
