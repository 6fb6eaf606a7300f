// The one translation unit that compiles Boost.Asio, Asio SSL and Beast
// (BOOST_ASIO_SEPARATE_COMPILATION / BOOST_BEAST_SEPARATE_COMPILATION are set on
// every target through kstate_asio), so every other file only parses declarations.
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
#include <boost/beast/src.hpp>
#include <utility>  // Boost 1.74's awaitable.hpp uses std::exchange without including it.
