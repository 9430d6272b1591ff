"""stub"""


def import_osim(path, **kw):
    raise NotImplementedError
