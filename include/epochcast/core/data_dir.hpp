// Where the bundled data (dataset, GPU and price catalogs, validation figures) is read from.
#pragma once

#include <string>

namespace epochcast {

// $EPOCHCAST_DATA_DIR when set; else share/epochcast beside the running binary's bin/ (an
// installed copy: PREFIX/bin/epochcast reads PREFIX/share/epochcast, wherever PREFIX was moved);
// else the source tree's data/ the build was configured with (a build tree).
[[nodiscard]] std::string data_dir();

}  // namespace epochcast
