"""The status web page's static files (HTML, JavaScript, CSS), served by rest.routes.ui at /ui."""
